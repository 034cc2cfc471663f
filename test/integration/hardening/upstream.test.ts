// A hostile model upstream: every way an answer can go wrong ends in the documented status within the
// endpoint's timeout plus a second, while other work goes on; deterministic refusals are not retried.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operationKey } from '../../../shared/completions/operations.js';
import { processOperation } from '../../../shared/completions/worker.js';
import { startMockLlm, type Behavior, type MockLlm } from '../../../scripts/mock-llm.js';
import { seedAgent } from '../../support/agents.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { INSTANCE } from '../../support/services.js';

const TIMEOUT_S = 2;

describe('hostile model upstream', () => {
  let app: TestApp;
  let hostile: MockLlm;
  let healthy: MockLlm;
  const complete = (agent: string, prompt = 'hello') =>
    app.call('POST', `${app.core}/instances/${INSTANCE}/completions`, {
      body: { user_prompt: prompt, agent_name: agent },
    });

  beforeAll(async () => {
    hostile = await startMockLlm();
    healthy = await startMockLlm();
    app = await startTestApp({ MODEL_MAX_RETRIES: '2', MODEL_MAX_RESPONSE_BYTES: String(1024 * 1024) });
    await seedAgent(app, 'hostile', { llmUrl: hostile.url, timeoutSeconds: TIMEOUT_S });
    await seedAgent(app, 'healthy', { llmUrl: healthy.url });
  });
  afterAll(async () => {
    await app.close();
    await hostile.close();
    await healthy.close();
  });

  // Each case: what the upstream does on every try, and what the client gets.
  const matrix: [string, Behavior, number, string][] = [
    ['hangs', { hangMs: 60_000 }, 504, 'UpstreamTimeout'],
    ['resets the connection', { reset: true }, 502, 'UpstreamUnavailable'],
    ['cuts the body off', { cutAfterBytes: 100 }, 502, 'UpstreamUnavailable'],
    ['trickles the body', { trickleMs: 200 }, 504, 'UpstreamTimeout'],
    ['answers {}', { raw: '{}' }, 502, 'UpstreamInvalidResponse'],
    ['answers invalid JSON', { raw: '{"choices": [' }, 502, 'UpstreamInvalidResponse'],
    [
      'answers HTML',
      { raw: '<html><body>Bad gateway</body></html>', contentType: 'text/html' },
      502,
      'UpstreamInvalidResponse',
    ],
    ['answers a body without end', { hugeBytes: 50 * 1024 * 1024 }, 502, 'UpstreamResponseTooLarge'],
    ['asks to come back in an hour', { status: 429, headers: { 'retry-after': '3600' } }, 503, 'UpstreamRateLimited'],
    [
      'asks to come back at a date next week',
      { status: 429, headers: { 'retry-after': new Date(Date.now() + 7 * 86_400_000).toUTCString() } },
      503,
      'UpstreamRateLimited',
    ],
  ];

  it.each(matrix)(
    'when the model %s, answers its status within the timeout plus 1 s while other work proceeds',
    async (_what, behavior, status, code) => {
      hostile.clear();
      hostile.next(behavior, behavior, behavior);
      const t0 = Date.now();
      const pending = complete('hostile');
      // Meanwhile: status and a completion on a healthy model answer at once.
      const [s, other] = await Promise.all([fetch(`${app.core}/status`), complete('healthy', 'meanwhile')]);
      expect(s.status).toBe(200);
      expect(other).toMatchObject({ status: 200, body: { completion: 'Echo: meanwhile' } });
      expect(Date.now() - t0).toBeLessThan(1000);
      const r = await pending;
      const elapsed = Date.now() - t0;
      expect(r.status, JSON.stringify(r.body)).toBe(status);
      expect(r.body).toMatchObject({ error: { code } });
      expect(elapsed).toBeLessThan(TIMEOUT_S * 1000 + 1000);
      if (status === 503) expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);
      // Nothing was recorded for the failed call, and the error says nothing about the network.
      expect(JSON.stringify(r.body)).not.toMatch(/ECONN|127\.0\.0\.1|socket|undici/i);
    },
  );

  it('does not retry a deterministic refusal (4xx), and retries a server error', async () => {
    hostile.clear();
    hostile.next({ status: 400 }, { status: 400 }, { status: 400 });
    let before = hostile.requests.length;
    expect((await complete('hostile')).body).toMatchObject({ error: { code: 'UpstreamRejected' } });
    expect(hostile.requests.length - before).toBe(1);
    hostile.clear();
    hostile.next({ status: 500 }, { status: 500 });
    before = hostile.requests.length;
    expect(await complete('hostile', 'third time lucky')).toMatchObject({
      status: 200,
      body: { completion: 'Echo: third time lucky' },
    });
    expect(hostile.requests.length - before).toBe(3);
  });

  it('ends an async operation at once when the model refuses the request deterministically (4xx)', async () => {
    const noWorker = await startTestApp({ MODEL_MAX_RETRIES: '2' }, { consumers: false });
    try {
      await seedAgent(noWorker, 'hostile', { llmUrl: hostile.url, timeoutSeconds: TIMEOUT_S });
      expect(
        (
          await noWorker.call('POST', `${noWorker.core}/instances/${INSTANCE}/async-completions`, {
            body: { user_prompt: 'x', agent_name: 'hostile', operation_id: 'op-refused' },
          })
        ).status,
      ).toBe(202);
      hostile.clear();
      hostile.next({ status: 422 });
      const key = operationKey('owner@local.test', 'op-refused');
      await processOperation({ key }, { id: 'm', dequeueCount: 1 }, noWorker.services);
      const op = await noWorker.services.store.container('operations').read(key, key);
      expect(op).toMatchObject({
        status: 'Failed',
        status_message: 'Failed: The model endpoint rejected the request (422)',
      });
    } finally {
      await noWorker.close();
    }
  });

  it('runs async operations independently: one hanging never holds up another', async () => {
    hostile.clear();
    hostile.next({ hangMs: 60_000 });
    const start = (agent: string, id: string) =>
      app.call('POST', `${app.core}/instances/${INSTANCE}/async-completions`, {
        body: { user_prompt: id, agent_name: agent, operation_id: id },
      });
    expect((await start('hostile', 'op-stuck')).status).toBe(202);
    await new Promise((r) => setTimeout(r, 200));
    expect((await start('healthy', 'op-free')).status).toBe(202);
    const until = Date.now() + 5000;
    let status = '';
    while (Date.now() < until) {
      status = (
        (await app.call('GET', `${app.core}/instances/${INSTANCE}/async-completions/op-free/status`)).body as {
          status: string;
        }
      ).status;
      if (status !== 'InProgress') break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(status).toBe('Completed');
    const stuck = await app.services.store
      .container('operations')
      .read(operationKey('owner@local.test', 'op-stuck'), operationKey('owner@local.test', 'op-stuck'));
    expect(stuck?.status).toBe('InProgress');
  });
});
