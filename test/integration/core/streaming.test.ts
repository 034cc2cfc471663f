// Streamed completions over HTTP: deltas as the model produces them, then the completion
// response; failures before the first piece answer with their ordinary status; a client that goes away
// stops the model call and nothing of the turn is recorded but a cancelled usage record.
import functions from '@azure/functions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROUTES } from '../../../functions/groups.js';
import { functionsHandler } from '../../../shared/http/azure-host.js';
import { startMockLlm, type MockLlm } from '../../../scripts/mock-llm.js';
import { seedAgent } from '../../support/agents.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { INSTANCE } from '../../support/services.js';
import { readEvents } from '../../support/sse.js';

describe('streamed completions', () => {
  let app: TestApp;
  let llm: MockLlm;
  const url = () => `${app.core}/instances/${INSTANCE}/completions`;
  const post = async (body: Record<string, unknown>, signal?: AbortSignal) =>
    fetch(url(), {
      method: 'POST',
      headers: {
        authorization: `Bearer ${await app.token()}`,
        'content-type': 'application/json',
        accept: 'text/event-stream',
      },
      body: JSON.stringify(body),
      ...(signal ? { signal } : {}),
    });
  const newSession = async () =>
    (
      (await app.call('POST', `${app.core}/instances/${INSTANCE}/sessions`, { body: { name: 'stream' } })).body as {
        id: string;
      }
    ).id;

  beforeAll(async () => {
    llm = await startMockLlm();
    app = await startTestApp({ MODEL_MAX_RETRIES: '0' });
    await seedAgent(app, 'streamer', { llmUrl: llm.url, history: { enabled: true, max_history: 3 } });
  });
  afterAll(async () => {
    await app.close();
    await llm.close();
  });

  it('sends the answer as delta events, then the completion response, and records the turn', async () => {
    llm.setStreaming(0, 60);
    const session = await newSession();
    const res = await post({ user_prompt: 'tell me a story please', agent_name: 'streamer', session_id: session });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const events = await readEvents(res.body!);
    const deltas = events.filter((e) => e.event === 'delta');
    expect(deltas.length).toBeGreaterThan(3);
    expect(events.map((e) => e.event)).toEqual([...deltas.map(() => 'delta'), 'completed']);
    const completed = events.at(-1)?.data as { completion: string; total_tokens: number; operation_id: string };
    expect(deltas.map((d) => (d.data as { text: string }).text).join('')).toBe(completed.completion);
    expect(completed.completion).toBe('Echo: tell me a story please');
    expect(completed.total_tokens).toBeGreaterThan(0);
    // Pieces arrive as the model sends them, not all at the end.
    expect((deltas.at(-1)?.at ?? 0) - (deltas[0]?.at ?? 0)).toBeGreaterThan(30);
    const messages = (await app.call('GET', `${app.core}/instances/${INSTANCE}/sessions/${session}/messages`)).body as {
      sender: string;
      text: string;
    }[];
    expect(messages.map((m) => [m.sender, m.text])).toEqual([
      ['User', 'tell me a story please'],
      ['Assistant', 'Echo: tell me a story please'],
    ]);
    expect(llm.requests.at(-1)?.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
  });

  it('uses one connection to the model for streamed answers one after another (each read to its end)', async () => {
    llm.setStreaming(0, 20);
    const stream = async () =>
      (await readEvents((await post({ user_prompt: 'again', agent_name: 'streamer' })).body!)).at(-1)?.event;
    expect(await stream()).toBe('completed');
    const before = llm.connections;
    for (let i = 0; i < 3; i++) expect(await stream()).toBe('completed');
    expect(llm.connections).toBe(before);
  });

  it('answers failures before the first piece with their ordinary JSON status', async () => {
    const invalid = await post({ agent_name: 'streamer' });
    expect(invalid.status).toBe(400);
    expect(await invalid.json()).toMatchObject({ error: { code: 'ValidationError' } });
    llm.next({ status: 500 });
    const failed = await post({ user_prompt: 'x', agent_name: 'streamer' });
    expect(failed.status).toBe(502);
    expect(failed.headers.get('content-type')).toContain('application/json');
    expect(await failed.json()).toMatchObject({ error: { code: 'UpstreamError' } });
  });

  it('streams from a model that ignores `stream`, as one piece', async () => {
    llm.next({
      raw: JSON.stringify({
        choices: [{ index: 0, message: { role: 'assistant', content: 'whole answer' } }],
        usage: { prompt_tokens: 3, completion_tokens: 2 },
      }),
    });
    const events = await readEvents((await post({ user_prompt: 'x', agent_name: 'streamer' })).body!);
    expect(
      events.map((e) => [
        e.event,
        (e.data as { text?: string; completion?: string }).text ?? (e.data as { completion: string }).completion,
      ]),
    ).toEqual([
      ['delta', 'whole answer'],
      ['completed', 'whole answer'],
    ]);
  });

  it('stops the model call when the client goes away, records the usage as cancelled and no turn', async () => {
    llm.setStreaming(0, 3000);
    const session = await newSession();
    const before = llm.aborted;
    const client = new AbortController();
    const res = await post(
      {
        user_prompt: 'a long answer with many many words in it',
        agent_name: 'streamer',
        session_id: session,
        operation_id: 'op-gone-away',
      },
      client.signal,
    );
    await readEvents(res.body!, (e) => e.event !== 'delta').catch(() => undefined);
    client.abort();
    const until = Date.now() + 5000;
    while (llm.aborted === before && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    expect(llm.aborted).toBe(before + 1);
    // Recorded once what was streamed is counted (the first count loads the tokenizer).
    const usage = () => app.services.store.container('usage').read('owner@local.test', 'op-gone-away');
    await expect.poll(usage, { timeout: 10_000 }).toMatchObject({ status: 'Cancelled' });
    expect((await app.call('GET', `${app.core}/instances/${INSTANCE}/sessions/${session}/messages`)).body).toEqual([]);
    llm.setStreaming(0, 0);
  });

  it('streams through the Azure Functions adapter (HTTP streams)', async () => {
    llm.setStreaming(0, 30);
    const route = ROUTES.find((r) => r.name === 'completions-create')!;
    const req = new functions.HttpRequest({
      method: 'POST',
      url: url(),
      headers: {
        authorization: `Bearer ${await app.token()}`,
        'content-type': 'application/json',
        accept: 'text/event-stream',
      },
      body: { string: JSON.stringify({ user_prompt: 'through functions', agent_name: 'streamer' }) },
      params: { instanceId: INSTANCE },
    });
    const res = await functionsHandler(route, () => Promise.resolve(app.services))(req);
    expect(res.status).toBe(200);
    expect((res.headers as Record<string, string>)['content-type']).toContain('text/event-stream');
    const events = await readEvents(res.body as ReadableStream<Uint8Array>);
    expect(events.at(-1)).toMatchObject({ event: 'completed', data: { completion: 'Echo: through functions' } });
    expect(events.filter((e) => e.event === 'delta').length).toBeGreaterThan(1);
  });
});
