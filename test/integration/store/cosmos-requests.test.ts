// What one completion with a session costs on Cosmos DB, in requests to the account, counted at a
// Cosmos-compatible server: the number is held here, so a change that adds a round trip is seen. Likewise
// the updates of one document queued in one process (a busy session's turns): a batch per group, no reads.
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { createHttpServer } from '@vercel/cosmosdb-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openCosmosStore } from '../../../shared/store/cosmos-store.js';
import type { DocumentStore } from '../../../shared/store/types.js';
import { startMockLlm, type MockLlm } from '../../../scripts/mock-llm.js';
import { seedAgent } from '../../support/agents.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { INSTANCE } from '../../support/services.js';
import { rawContainer } from '../../support/raw-container.js';

describe('Cosmos DB requests of a completion', () => {
  let server: ReturnType<typeof createHttpServer>;
  let app: TestApp;
  let llm: MockLlm;
  let store: DocumentStore;
  const requests: string[] = [];

  beforeAll(async () => {
    server = createHttpServer({ keepAlive: true });
    server.on('request', (req: { method?: string; url?: string; headers: Record<string, string | undefined> }) => {
      const kind = req.headers['x-ms-cosmos-is-query-plan-request']
        ? ' (query plan)'
        : req.headers['x-ms-documentdb-isquery']
          ? ' (query)'
          : req.headers['x-ms-cosmos-is-batch-request']
            ? ' (batch)'
            : '';
      requests.push(`${req.method ?? ''} ${(req.url ?? '').replace(/\/docs\/[^/]+$/, '/docs/{id}')}${kind}`);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    store = await openCosmosStore({
      endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      key: 'local-test-key',
      database: `db-${randomUUID()}`,
      createContainers: true,
    });
    llm = await startMockLlm();
    app = await startTestApp({}, { store });
    await seedAgent(app, 'counted', { llmUrl: llm.url, history: { enabled: true, max_history: 5 } });
  });
  afterAll(async () => {
    await app.close();
    await llm.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
  });

  it(
    'makes 4 requests: the session (with its recent messages), the turn listed on it, one batch with both ' +
      'messages, the prompt, the session update and the end of the listing, the usage record',
    async () => {
      const session = (
        (await app.call('POST', `${app.core}/instances/${INSTANCE}/sessions`, { body: { name: 'count' } })).body as {
          id: string;
        }
      ).id;
      const complete = () =>
        app.call('POST', `${app.core}/instances/${INSTANCE}/completions`, {
          body: { user_prompt: 'count me', agent_name: 'counted', session_id: session },
        });
      // Warm: caches of the agent chain, role assignments and settings, and the SDK's own metadata.
      expect((await complete()).status).toBe(200);
      requests.length = 0;
      expect((await complete()).status).toBe(200);
      process.stdout.write(
        `Cosmos requests of one completion with a session: ${requests.length}\n  ${requests.join('\n  ')}\n`,
      );
      // The listing is written while the turn gets under way; the batch and the usage record go side by side:
      // two round trips after the model's answer.
      expect(requests.map((r) => r.replace(/\/dbs\/[^/]+/, '')).sort()).toEqual([
        'GET /colls/sessions/docs/{id}',
        'POST /colls/sessions/docs',
        'POST /colls/sessions/docs (batch)',
        'POST /colls/usage/docs',
      ]);
    },
  );

  it("writes a document's updates that wait for a batch as one batch, from the version that batch wrote", async () => {
    const sessions = rawContainer<{ id: string; pk: string; n: number }>(store, 'sessions');
    const known = await sessions.create({ id: 'queued', pk: 'queued', n: 0 });
    requests.length = 0;
    // Ten updates of one document at once, each with the copy read before: the first is written alone, the
    // nine that waited for it together.
    await Promise.all(
      Array.from({ length: 10 }, () =>
        sessions.writeBatch('queued', [
          { op: 'update', id: 'queued', known, apply: (cur) => ({ ...cur, n: cur.n + 1 }) },
        ]),
      ),
    );
    expect(requests.filter((r) => r.endsWith('(batch)'))).toHaveLength(2);
    expect(requests.filter((r) => r.startsWith('GET'))).toEqual([]);
    expect((await sessions.read('queued', 'queued'))?.n).toBe(10);
  });
});
