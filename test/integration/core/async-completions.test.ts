// Async completions: start, poll, the queue worker, at-least-once delivery, exhausted attempts, and a
// worker process killed in the middle of an operation.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operationKey } from '../../../shared/completions/operations.js';
import { failPoisoned, processOperation } from '../../../shared/completions/worker.js';
import { startQueueConsumer } from '../../../shared/queues/local-consumer.js';
import { freePort } from '../../../scripts/azurite.js';
import { startMockLlm, type MockLlm } from '../../../scripts/mock-llm.js';
import { seedAgent } from '../../support/agents.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { startScript } from '../../support/processes.js';
import { INSTANCE } from '../../support/services.js';

const OWNER = 'owner@local.test';
/** The queue message and store key of one of the owner's operations. */
const keyOf = (operationId: string) => operationKey(OWNER, operationId);
const message = (operationId: string) => ({ key: keyOf(operationId), operation_id: operationId });

async function pollUntilDone(app: TestApp, operationId: string, timeoutMs = 30_000): Promise<Record<string, unknown>> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const r = await app.call('GET', `${app.core}/instances/${INSTANCE}/async-completions/${operationId}/status`);
    expect(r.status).toBe(200);
    const body = r.body as Record<string, unknown>;
    if (body.status !== 'InProgress') return body;
    if (Date.now() > end) throw new Error(`still InProgress: ${JSON.stringify(body)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('async completions', () => {
  let app: TestApp;
  let llm: MockLlm;
  const start = (body: Record<string, unknown>, as?: string) =>
    app.call('POST', `${app.core}/instances/${INSTANCE}/async-completions`, { body, ...(as ? { as } : {}) });
  const operations = () => app.services.store.container('operations');

  beforeAll(async () => {
    llm = await startMockLlm();
    app = await startTestApp({ MODEL_MAX_RETRIES: '0' });
    await seedAgent(app, 'helper', { llmUrl: llm.url });
  });
  afterAll(async () => {
    await app.close();
    await llm.close();
  });

  it('starts with 202 InProgress and reaches Completed with the completion response', async () => {
    const session = (
      (await app.call('POST', `${app.core}/instances/${INSTANCE}/sessions`, { body: { name: 'async' } })).body as {
        id: string;
      }
    ).id;
    const started = await start({ user_prompt: 'async hello', agent_name: 'helper', session_id: session });
    expect(started.status).toBe(202);
    const op = started.body as { operation_id: string };
    expect(started.body).toEqual({
      operation_id: op.operation_id,
      status: 'InProgress',
      status_message: 'Queued',
      result: null,
    });
    const done = await pollUntilDone(app, op.operation_id);
    expect(done).toMatchObject({
      operation_id: op.operation_id,
      status: 'Completed',
      status_message: 'Completed',
      result: {
        operation_id: op.operation_id,
        user_prompt: 'async hello',
        completion: 'Echo: async hello',
        content: [{ type: 'text', value: 'Echo: async hello' }],
      },
    });
    expect(done.last_updated).toEqual(expect.any(String));
    const messages = (await app.call('GET', `${app.core}/instances/${INSTANCE}/sessions/${session}/messages`)).body as {
      sender: string;
    }[];
    expect(messages.map((m) => m.sender)).toEqual(['User', 'Assistant']);
  });

  it('lets only its starter read an operation; unknown ids are 404', async () => {
    const started = await start({ user_prompt: 'mine', agent_name: 'helper', operation_id: 'op-private' });
    expect(started.status).toBe(202);
    expect(
      (
        await app.call('GET', `${app.core}/instances/${INSTANCE}/async-completions/op-private/status`, {
          as: 'eve@example.com',
        })
      ).status,
    ).toBe(404);
    expect((await app.call('GET', `${app.core}/instances/${INSTANCE}/async-completions/nope/status`)).status).toBe(404);
    expect((await start({ user_prompt: 'again', agent_name: 'helper', operation_id: 'op-private' })).status).toBe(409);
  });

  it('validates before queueing anything', async () => {
    expect((await start({ agent_name: 'helper' })).status).toBe(400);
    expect((await start({ user_prompt: 'x', agent_name: 'missing' })).status).toBe(400);
    expect((await start({ user_prompt: 'x', agent_name: 'helper' }, 'stranger@example.com')).status).toBe(403);
  });

  it('is idempotent under redelivery: one pair of messages, one usage record, one model call', async () => {
    const noWorker = await startTestApp({}, { consumers: false });
    try {
      await seedAgent(noWorker, 'helper', { llmUrl: llm.url });
      const s2 = (
        (await noWorker.call('POST', `${noWorker.core}/instances/${INSTANCE}/sessions`, { body: { name: 'r' } }))
          .body as { id: string }
      ).id;
      const started = await noWorker.call('POST', `${noWorker.core}/instances/${INSTANCE}/async-completions`, {
        body: { user_prompt: 'once', agent_name: 'helper', session_id: s2, operation_id: 'op-once' },
      });
      expect(started.status).toBe(202);
      // The worker "crashes" after recording the turn but before marking the operation: simulate by
      // marking it InProgress again after a full run, then deliver the same message twice more.
      const calls = llm.requests.length;
      await processOperation(message('op-once'), { id: 'm', dequeueCount: 1 }, noWorker.services);
      const ops = noWorker.services.store.container('operations');
      const done = (await ops.read(keyOf('op-once'), keyOf('op-once')))!;
      await ops.replace({ ...done, status: 'InProgress', result: null });
      await processOperation(message('op-once'), { id: 'm', dequeueCount: 2 }, noWorker.services);
      await processOperation(message('op-once'), { id: 'm', dequeueCount: 3 }, noWorker.services);
      expect(llm.requests.length - calls).toBe(1);
      const messages = (await noWorker.call('GET', `${noWorker.core}/instances/${INSTANCE}/sessions/${s2}/messages`))
        .body as unknown[];
      expect(messages).toHaveLength(2);
      const usage = await noWorker.services.store
        .container('usage')
        .query({ partition: OWNER, where: [{ field: 'operation_id', op: 'eq', value: 'op-once' }] });
      expect(usage.items).toHaveLength(1);
      expect((await ops.read(keyOf('op-once'), keyOf('op-once')))?.status).toBe('Completed');
    } finally {
      await noWorker.close();
    }
  });

  it('ends Failed with the reason after the last attempt, retrying before that', async () => {
    const broken = await startMockLlm();
    await seedAgent(app, 'broken', { llmUrl: broken.url });
    const noWorker = await startTestApp({ MODEL_MAX_RETRIES: '0' }, { consumers: false });
    try {
      await seedAgent(noWorker, 'broken', { llmUrl: broken.url });
      await noWorker.call('POST', `${noWorker.core}/instances/${INSTANCE}/async-completions`, {
        body: { user_prompt: 'x', agent_name: 'broken', operation_id: 'op-fail' },
      });
      const ops = noWorker.services.store.container('operations');
      for (let attempt = 1; attempt <= 4; attempt++) {
        broken.next({ status: 500 });
        await expect(
          processOperation(message('op-fail'), { id: 'm', dequeueCount: attempt }, noWorker.services),
        ).rejects.toThrow();
        expect(await ops.read(keyOf('op-fail'), keyOf('op-fail'))).toMatchObject({
          status: 'InProgress',
          status_message: expect.stringContaining(`Attempt ${attempt} failed`) as string,
        });
      }
      broken.next({ status: 500 });
      await processOperation(message('op-fail'), { id: 'm', dequeueCount: 5 }, noWorker.services);
      expect(await ops.read(keyOf('op-fail'), keyOf('op-fail'))).toMatchObject({
        status: 'Failed',
        status_message: expect.stringContaining('Failed after 5 attempts') as string,
        result: null,
      });

      // A permanent error (the agent is gone) fails at once; a poisoned message fails its operation.
      await noWorker.call('POST', `${noWorker.core}/instances/${INSTANCE}/async-completions`, {
        body: { user_prompt: 'x', agent_name: 'broken', operation_id: 'op-gone' },
      });
      await noWorker.call('DELETE', `${noWorker.management}/instances/${INSTANCE}/providers/Svc.Agent/agents/broken`);
      await processOperation(message('op-gone'), { id: 'm', dequeueCount: 1 }, noWorker.services);
      expect((await ops.read(keyOf('op-gone'), keyOf('op-gone')))?.status).toBe('Failed');
      await ops.create({
        ...(await ops.read(keyOf('op-gone'), keyOf('op-gone')))!,
        id: keyOf('op-poison'),
        pk: keyOf('op-poison'),
        operation_id: 'op-poison',
        status: 'InProgress',
      });
      await failPoisoned(message('op-poison'), { id: 'm', dequeueCount: 1 }, noWorker.services);
      expect(await ops.read(keyOf('op-poison'), keyOf('op-poison'))).toMatchObject({
        status: 'Failed',
        status_message: expect.stringContaining('gave up') as string,
      });
    } finally {
      await noWorker.close();
      await broken.close();
    }
  });

  it('reports an operation that stopped making progress as Failed', async () => {
    await start({ user_prompt: 'stale', agent_name: 'helper', operation_id: 'op-stale' });
    await pollUntilDone(app, 'op-stale');
    const op = (await operations().read(keyOf('op-stale'), keyOf('op-stale')))!;
    await operations().replace({ ...op, status: 'InProgress', last_updated: '2020-01-01T00:00:00.000Z' });
    const r = await app.call('GET', `${app.core}/instances/${INSTANCE}/async-completions/op-stale/status`);
    expect(r.body).toMatchObject({ status: 'Failed', status_message: expect.stringContaining('Timed out') as string });
  });

  it(
    'finishes an operation whose worker process was killed mid-call, on redelivery within a minute, with ' +
      'default settings',
    async () => {
      const hanging = await startMockLlm();
      const host = await startTestApp({ MODEL_MAX_RETRIES: '0' }, { consumers: false });
      try {
        await seedAgent(host, 'helper', { llmUrl: hanging.url, timeoutSeconds: 120 });
        // A separate worker process (npm start) on the same store and queue, with the default lease.
        const worker = await startScript(
          'start',
          { ...host.env, CORE_PORT: String(await freePort()), MANAGEMENT_PORT: String(await freePort()) },
          /Get a token/,
        );
        hanging.next({ hangMs: 120_000 });
        const started = await host.call('POST', `${host.core}/instances/${INSTANCE}/async-completions`, {
          body: { user_prompt: 'survive', agent_name: 'helper', operation_id: 'op-killed' },
        });
        expect(started.status).toBe(202);
        const end = Date.now() + 20_000;
        while (hanging.requests.length === 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
        expect(hanging.requests).toHaveLength(1);
        // The signal reaches the process that runs the worker: it is gone, mid-call.
        const pid = worker.child.pid!;
        worker.child.kill('SIGKILL');
        await new Promise((r) => worker.child.once('exit', r));
        expect(() => process.kill(pid, 0)).toThrow();
        const killedAt = Date.now();
        expect(
          (await host.services.store.container('operations').read(keyOf('op-killed'), keyOf('op-killed')))?.status,
        ).toBe('InProgress');

        // A new worker with the default lease picks the message up once the dead worker's lease lapses.
        const [handler] = (await import('../../../functions/groups.js')).QUEUE_HANDLERS;
        const consumer = startQueueConsumer(handler!, await host.services.queues(), host.services, {
          idlePollMs: 200,
          visibilityTimeoutSeconds: host.services.config.queueVisibilityTimeoutSeconds,
        });
        try {
          const done = await pollUntilDone(host, 'op-killed', 60_000);
          expect(done).toMatchObject({ status: 'Completed', result: { completion: 'Echo: survive' } });
          expect(Date.now() - killedAt).toBeLessThan(60_000);
          expect(hanging.requests).toHaveLength(2);
        } finally {
          await consumer.stop();
        }
      } finally {
        await host.close();
        await hanging.close();
      }
    },
    90_000,
  );
});
