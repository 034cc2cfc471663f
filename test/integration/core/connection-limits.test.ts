// An API endpoint's max_connections over HTTP: streamed answers hold the endpoint's connections while they
// stream, another agent's call is served before a busy agent's queued ones (the order the model is called
// in), and a call that gets no connection within the endpoint's timeout is a 503 ConnectionLimit, not a 504.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockLlm, type MockLlm } from '../../../scripts/mock-llm.js';
import { seedAgent } from '../../support/agents.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { INSTANCE } from '../../support/services.js';

describe('connection limits per API endpoint', () => {
  let app: TestApp;
  let llm: MockLlm;
  const endpoint = (name: string) =>
    `/instances/${INSTANCE}/providers/Svc.Configuration/apiEndpointConfigurations/${name}-endpoint`;
  const [BUSY, TIGHT] = [endpoint('busy'), endpoint('tight')];
  const stream = async (agent: string) => {
    const r = await fetch(`${app.core}/instances/${INSTANCE}/completions`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${await app.token()}`,
        'content-type': 'application/json',
        accept: 'text/event-stream',
      },
      body: JSON.stringify({ user_prompt: 'tell me a long story please', agent_name: agent }),
    });
    return { status: r.status, text: await r.text(), ended: Date.now() };
  };
  const waiting = (objectId: string) => app.services.models.connections.load(objectId);

  beforeAll(async () => {
    llm = await startMockLlm();
    app = await startTestApp({ MODEL_MAX_RETRIES: '0' });
    // Two connections shared by two agents, a long timeout: nobody is refused, the order shows who is served.
    await seedAgent(app, 'busy', { llmUrl: llm.url, maxConnections: 2, timeoutSeconds: 60 });
    await seedAgent(app, 'quiet', { llmUrl: llm.url, endpointOf: 'busy' });
    // One connection and a 1 s timeout: a call that finds it taken is refused.
    await seedAgent(app, 'tight', { llmUrl: llm.url, maxConnections: 1, timeoutSeconds: 1 });
  });
  afterAll(async () => {
    await app.close();
    await llm.close();
  });

  it("serves another agent first when a busy agent's calls wait for the endpoint's connections", async () => {
    // Each streamed answer holds its connection for 3 s: time enough to queue every call first.
    llm.setStreaming(0, 3000);
    const before = llm.requests.length;
    try {
      // The first two a moment apart, so that their connections free one after the other.
      const calls = [stream('busy')];
      await expect.poll(() => waiting(BUSY)).toEqual({ inUse: 1, waiting: 0 });
      await new Promise((r) => setTimeout(r, 300));
      calls.push(stream('busy'), stream('busy'), stream('busy'));
      await expect.poll(() => waiting(BUSY)).toEqual({ inUse: 2, waiting: 2 });
      const quiet = stream('quiet');
      await expect.poll(() => waiting(BUSY)).toEqual({ inUse: 2, waiting: 3 });
      for (const r of [...(await Promise.all(calls)), await quiet]) expect(r.text).toContain('event: completed');
      // The order the model was called in: when the first connection frees, the quiet agent (holding none)
      // gets it though it came last; first come, first served, it would have waited for both busy calls.
      expect(llm.requests.slice(before).map((r) => r.body.model)).toEqual([
        'busy-deployment',
        'busy-deployment',
        'quiet-deployment',
        'busy-deployment',
        'busy-deployment',
      ]);
    } finally {
      llm.setStreaming(0, 0);
    }
    expect(waiting(BUSY)).toEqual({ inUse: 0, waiting: 0 });
  });

  it(
    'answers a call that gets no connection within its timeout with 503 ConnectionLimit and Retry-After, not a ' +
      'timeout',
    async () => {
      llm.setStreaming(0, 5000);
      try {
        const holder = stream('tight');
        await expect.poll(() => waiting(TIGHT)).toEqual({ inUse: 1, waiting: 0 });
        const r = await app.call('POST', `${app.core}/instances/${INSTANCE}/completions`, {
          body: { user_prompt: 'hello', agent_name: 'tight' },
        });
        expect(r.status).toBe(503);
        expect(r.body).toMatchObject({
          error: { code: 'ConnectionLimit', message: expect.stringContaining('All 1 connections') as string },
        });
        expect(r.headers.get('retry-after')).toMatch(/^\d+$/);
        expect((await holder).text).toContain('event: completed');
      } finally {
        llm.setStreaming(0, 0);
      }
    },
  );

  it('checks max_connections on save', async () => {
    for (const value of [0, -1, 1.5, 1_000_000]) {
      const r = await app.call('POST', `${app.management}${BUSY}`, {
        body: {
          name: 'busy-endpoint',
          category: 'LLM',
          provider: 'openai',
          url: `${llm.url}/v1`,
          authentication_type: 'None',
          max_connections: value,
        },
      });
      expect(r.status, String(value)).toBe(400);
      expect(JSON.stringify(r.body)).toContain('max_connections');
    }
  });
});
