// An API endpoint's max_connections over HTTP: streamed answers hold the endpoint's connections while they
// stream, a busy agent's extra calls wait behind another agent's (which takes the next free connection),
// and a call that gets no connection within the endpoint's timeout is a 503 ConnectionLimit, not a 504.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockLlm, type MockLlm } from '../../../scripts/mock-llm.js';
import { seedAgent } from '../../support/agents.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { INSTANCE } from '../../support/services.js';

describe('connection limits per API endpoint', () => {
  let app: TestApp;
  let llm: MockLlm;
  const ENDPOINT = `/instances/${INSTANCE}/providers/Svc.Configuration/apiEndpointConfigurations/busy-endpoint`;
  const stream = async (agent: string) => {
    const r = await fetch(`${app.core}/instances/${INSTANCE}/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${await app.token()}`, 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ user_prompt: 'tell me a long story please', agent_name: agent }),
    });
    return { status: r.status, text: await r.text(), ended: Date.now() };
  };
  const waiting = () => app.services.models.connections.load(ENDPOINT);

  beforeAll(async () => {
    llm = await startMockLlm();
    app = await startTestApp({ MODEL_MAX_RETRIES: '0' });
    // Two connections; every call waits 2 s at most for one (the endpoint's timeout).
    await seedAgent(app, 'busy', { llmUrl: llm.url, maxConnections: 2, timeoutSeconds: 2 });
    await seedAgent(app, 'quiet', { llmUrl: llm.url, endpointOf: 'busy' });
  });
  afterAll(async () => {
    await app.close();
    await llm.close();
  });

  it("serves another agent first when a busy agent's calls wait for the endpoint's connections", async () => {
    // Each streamed answer holds its connection for about 1.2 s.
    llm.setStreaming(0, 1200);
    try {
      const calls = [stream('busy'), stream('busy'), stream('busy'), stream('busy')];
      await expect.poll(waiting).toEqual({ inUse: 2, waiting: 2 });
      const quiet = stream('quiet');
      await expect.poll(waiting).toEqual({ inUse: 2, waiting: 3 });
      const [first, second, third, fourth] = await Promise.all(calls);
      const q = await quiet;
      // When the first two end (1.2 s) one connection goes to the quiet agent, though it came last, and one to
      // the busy agent's third call; its fourth finds none within 2 s and is refused in its stream as the limit.
      // First come, first served, the quiet agent would have been the one refused.
      expect(q.text).not.toContain('ConnectionLimit');
      expect(q.text).toContain('event: completed');
      const refused = [third, fourth].filter((r) => r?.text.includes('ConnectionLimit'));
      expect(refused).toHaveLength(1);
      expect(refused[0]?.text).toContain('All 2 connections');
      for (const r of [first, second, q, third, fourth]) expect(r?.text).not.toContain('UpstreamTimeout');
    } finally {
      llm.setStreaming(0, 0);
    }
    expect(waiting()).toEqual({ inUse: 0, waiting: 0 });
  });

  it('answers a whole completion that gets no connection with 503 ConnectionLimit and Retry-After', async () => {
    llm.setStreaming(0, 3000);
    try {
      const holders = [stream('busy'), stream('busy')];
      await expect.poll(waiting).toEqual({ inUse: 2, waiting: 0 });
      const r = await app.call('POST', `${app.core}/instances/${INSTANCE}/completions`, { body: { user_prompt: 'hello', agent_name: 'quiet' } });
      expect(r.status).toBe(503);
      expect(r.body).toMatchObject({ error: { code: 'ConnectionLimit', message: expect.stringContaining("max_connections") as string } });
      expect(r.headers.get('retry-after')).toMatch(/^\d+$/);
      for (const h of await Promise.all(holders)) expect(h.status).toBe(200);
    } finally {
      llm.setStreaming(0, 0);
    }
  });

  it('checks max_connections on save', async () => {
    for (const value of [0, -1, 1.5, 1_000_000]) {
      const r = await app.call('POST', `${app.management}${ENDPOINT}`, { body: { name: 'busy-endpoint', category: 'LLM', provider: 'openai', url: `${llm.url}/v1`, authentication_type: 'None', max_connections: value } });
      expect(r.status, String(value)).toBe(400);
      expect(JSON.stringify(r.body)).toContain('max_connections');
    }
  });
});
