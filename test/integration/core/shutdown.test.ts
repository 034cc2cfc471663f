// Stopping the standalone service while a completion runs whose client has already gone away.
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startMockLlm, type MockLlm } from '../../../scripts/mock-llm.js';
import { openSqliteStore } from '../../../shared/store/sqlite-store.js';
import { seedAgent } from '../../support/agents.js';
import { startTestApp } from '../../support/app.js';
import { INSTANCE } from '../../support/services.js';
import { narrowed } from '../../../shared/store/narrowed.js';
import { isMessage } from '../../../shared/conversations/conversations.js';

describe('stopping the service', () => {
  let llm: MockLlm;
  afterAll(() => llm.close());

  it('records the turn of a completion whose client left before the store is closed', async () => {
    llm = await startMockLlm();
    const app = await startTestApp();
    await seedAgent(app, 'helper', { llmUrl: llm.url });
    const session = (await app.call('POST', `${app.core}/instances/${INSTANCE}/sessions`, { body: { name: 'Chat' } }))
      .body as { id: string };
    llm.next({ hangMs: 500 });
    const client = new AbortController();
    const answered = fetch(`${app.core}/instances/${INSTANCE}/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${await app.token()}`, 'content-type': 'application/json' },
      body: JSON.stringify({ user_prompt: 'Still there?', agent_name: 'helper', session_id: session.id }),
      signal: client.signal,
    }).catch(() => 'gone');
    while (llm.requests.length === 0) await new Promise((r) => setTimeout(r, 10));
    client.abort();
    expect(await answered).toBe('gone');

    // The connection is closed already; the handler still runs and writes the turn within the grace.
    await app.close();
    const store = openSqliteStore(path.join(app.dataDir, 'store.db'));
    try {
      const page = await narrowed(store.container('sessions'), isMessage).query({
        where: [
          { field: 'type', op: 'eq', value: 'Message' },
          { field: 'session_id', op: 'eq', value: session.id },
        ],
      });
      expect(page.items.map((m) => m.sender).sort()).toEqual(['Assistant', 'User']);
    } finally {
      await store.close();
    }
  });
});
