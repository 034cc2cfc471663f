// Two instances of the service on one store: on the embedded store this process and `npm start`'s entry in
// a child process; on Cosmos DB (the local Cosmos-compatible server) two instances in this process, each
// with its own services, sharing one database. A background stream started on one replays and is
// cancelled on the other, and the multitask strategies of one session hold across them.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { freePort } from '../../../scripts/azurite.js';
import { startMockLlm, textOf, type MockLlm } from '../../../scripts/mock-llm.js';
import { LOCAL_DEFAULT_USER, loadLocalKey, mintLocalToken } from '../../../shared/auth/local-idp.js';
import { openCosmosStore } from '../../../shared/store/cosmos-store.js';
import { seedAgent } from '../../support/agents.js';
import { caller, startTestApp, type ApiClient, type TestApp } from '../../support/app.js';
import { startScript } from '../../support/processes.js';
import { INSTANCE } from '../../support/services.js';
import { readEvents } from '../../support/sse.js';

/** The instance the test talks to first (in this process), and the other one. */
interface Pair {
  a: TestApp;
  bCore: string;
  /** A token of the owner that the other instance accepts. */
  bToken(): Promise<string>;
  close(): Promise<void>;
}

/** The embedded store: the other instance is `npm start`'s entry in a child process, on this one's DATA_DIR. */
async function twoProcesses(): Promise<Pair> {
  const a = await startTestApp();
  const port = await freePort();
  const b = await startScript(
    'start',
    { ...a.env, CORE_PORT: String(port), MANAGEMENT_PORT: String(await freePort()) },
    /Get a token/,
  );
  const auth = a.services.config.auth;
  if (auth.kind !== 'local') throw new Error('the local identity provider is needed');
  const key = await loadLocalKey(auth.keyFile);
  // Its issuer names its own port.
  const bToken = () =>
    mintLocalToken(key, `http://127.0.0.1:${port}/local-idp`, auth.audience, {
      upn: LOCAL_DEFAULT_USER.upn,
      oid: LOCAL_DEFAULT_USER.oid,
    });
  return { a, bCore: `http://127.0.0.1:${port}`, bToken, close: async () => (await b.stop(), await a.close()) };
}

/** Cosmos DB: two instances with services of their own on one database. */
async function twoOnCosmos(): Promise<Pair> {
  const database = `db-${randomUUID()}`;
  const open = () =>
    openCosmosStore({ endpoint: inject('cosmosEndpoint'), key: 'local-test-key', database, createContainers: true });
  const a = await startTestApp({}, { store: await open() });
  const b = await startTestApp({}, { store: await open() });
  return { a, bCore: b.core, bToken: () => b.token(), close: async () => (await b.close(), await a.close()) };
}

describe.each([
  { name: 'the embedded store, two processes', start: twoProcesses },
  { name: 'Cosmos DB, two instances', start: twoOnCosmos },
])('conversation records across two instances on $name', ({ start }) => {
  let llm: MockLlm;
  let pair: Pair;
  let a: TestApp;
  let bCore: string;
  const completions = `/instances/${INSTANCE}/completions`;
  const bToken = () => pair.bToken();
  const onB = (): ApiClient['call'] => caller(bToken);

  beforeAll(async () => {
    llm = await startMockLlm();
    pair = await start();
    ({ a, bCore } = pair);
    await seedAgent(a, 'twin', { llmUrl: llm.url, history: { enabled: true, max_history: 5 } });
  }, 60_000);
  afterAll(async () => {
    await pair.close();
    await llm.close();
  });

  const session = async () =>
    (
      (await a.call('POST', `${a.core}/instances/${INSTANCE}/sessions`, { body: { name: 'twins' } })).body as {
        id: string;
      }
    ).id;
  const messages = async (id: string) =>
    (await a.call('GET', `${a.core}/instances/${INSTANCE}/sessions/${id}/messages`)).body as { text: string }[];

  it('replays a background stream of one instance on the other, from Last-Event-ID, to its end', async () => {
    const id = await session();
    const prompt = Array.from({ length: 20 }, (_, i) => `part${i}`).join(' ');
    llm.setStreaming(50, 1200);
    try {
      const gone = new AbortController();
      const r = await fetch(`${a.core}${completions}`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${await a.token()}`,
          'content-type': 'application/json',
          accept: 'text/event-stream',
        },
        body: JSON.stringify({ agent_name: 'twin', user_prompt: prompt, session_id: id, background: true }),
        signal: gone.signal,
      });
      const operationId = r.headers.get('x-operation-id');
      const reader = r.body!.getReader();
      await reader.read();
      gone.abort();
      // The other instance follows it live from event 2 until `completed`.
      const replay = await fetch(`${bCore}${completions}/${operationId}/stream`, {
        headers: { authorization: `Bearer ${await bToken()}`, 'last-event-id': '1' },
      });
      expect(replay.status).toBe(200);
      const text = await replay.text();
      const ids = [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
      expect(ids).toEqual(ids.map((_, i) => i + 2));
      const completed = /event: completed\ndata: (.*)\n/.exec(text)?.[1];
      expect((JSON.parse(completed ?? '{}') as { completion?: string }).completion).toBe(`Echo: ${prompt}`);
      await expect.poll(() => messages(id), { timeout: 10_000 }).toHaveLength(2);
    } finally {
      llm.setStreaming(0, 0);
    }
  });

  it('cancels on one instance a background stream that runs on the other', async () => {
    const id = await session();
    llm.setStreaming(50, 10_000);
    try {
      const r = await fetch(`${a.core}${completions}`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${await a.token()}`,
          'content-type': 'application/json',
          accept: 'text/event-stream',
        },
        body: JSON.stringify({
          agent_name: 'twin',
          user_prompt: Array.from({ length: 40 }, (_, i) => `w${i}`).join(' '),
          session_id: id,
          background: true,
        }),
      });
      const operationId = r.headers.get('x-operation-id');
      const events = readEvents(r.body!);
      await new Promise((resolve) => setTimeout(resolve, 300));
      const cancelled = await onB()('POST', `${bCore}${completions}/${operationId}/cancel`);
      expect(cancelled.body).toEqual({ operation_id: operationId, status: 'Cancelled' });
      const started = Date.now();
      const received = await events;
      expect(Date.now() - started).toBeLessThan(3000);
      expect(received.at(-1)).toMatchObject({ event: 'error', data: { error: { code: 'Cancelled' } } });
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(await messages(id)).toEqual([]);
    } finally {
      llm.setStreaming(0, 0);
    }
  });

  it('holds multitask_strategy across instances: reject and interrupt on the other instance', async () => {
    const id = await session();
    llm.next({ hangMs: 20_000 });
    const running = a.call('POST', `${a.core}${completions}`, {
      body: { agent_name: 'twin', user_prompt: 'long turn', session_id: id },
    });
    await expect
      .poll(() => llm.requests.at(-1)?.body.messages.some((m) => textOf(m.content) === 'long turn'), {
        timeout: 10_000,
      })
      .toBe(true);
    const rejected = await onB()('POST', `${bCore}${completions}`, {
      body: { agent_name: 'twin', user_prompt: 'rejected', session_id: id, multitask_strategy: 'reject' },
    });
    expect(rejected.status).toBe(409);
    expect(rejected.body).toMatchObject({ error: { code: 'SessionBusy' } });
    const interrupting = await onB()('POST', `${bCore}${completions}`, {
      body: { agent_name: 'twin', user_prompt: 'interrupting', session_id: id, multitask_strategy: 'interrupt' },
    });
    expect(interrupting.status).toBe(200);
    expect((await running).body).toMatchObject({ error: { code: 'Cancelled' } });
    expect((await messages(id)).map((m) => m.text)).toEqual(['interrupting', 'Echo: interrupting']);
  });
});
