// The async run over HTTP: the 202's Location and Retry-After (on both hosts), cancel (the
// model call in flight is aborted, here and from another instance, and nothing is recorded), a model that
// always fails ends Failed within 90 s, and signed webhooks with retried deliveries and the URL rules.
import { createHmac } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import functions from '@azure/functions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROUTES } from '../../../functions/groups.js';
import { functionsHandler } from '../../../shared/http/azure-host.js';
import { openSqliteStore } from '../../../shared/store/sqlite-store.js';
import { startMockLlm, type MockLlm } from '../../../scripts/mock-llm.js';
import { seedAgent } from '../../support/agents.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { INSTANCE } from '../../support/services.js';

type Operation = {
  operation_id: string;
  status: string;
  status_message: string;
  result: unknown;
  deliveries?: { attempt: number; outcome: string; status_code?: number }[];
};

const until = async <T>(
  what: string,
  read: () => Promise<T>,
  done: (v: T) => boolean,
  timeoutMs = 20_000,
): Promise<T> => {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await read();
    if (done(v)) return v;
    if (Date.now() > end) throw new Error(`${what}: still ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
};

/** A webhook receiver on loopback that answers the given statuses in turn, then 200. */
async function startReceiver(statuses: number[]) {
  const received: { headers: http.IncomingHttpHeaders; body: string; answered: number }[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const answered = statuses.shift() ?? 200;
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), answered });
      res.writeHead(answered).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/ops`,
    received,
    close: () => new Promise((r) => server.close(r)),
  };
}

describe('the async run', () => {
  let app: TestApp;
  let llm: MockLlm;
  const asyncUrl = () => `${app.core}/instances/${INSTANCE}/async-completions`;
  const start = (body: Record<string, unknown>, on = app) =>
    on.call('POST', `${on.core}/instances/${INSTANCE}/async-completions`, { body });
  const status = async (operationId: string, as?: string) =>
    (
      await app.call(
        'GET',
        `${app.core}/instances/${INSTANCE}/async-completions/${operationId}/status`,
        as ? { as } : {},
      )
    ).body as Operation;
  const cancel = (operationId: string, options: { as?: string; on?: TestApp } = {}) => {
    const on = options.on ?? app;
    return on.call(
      'POST',
      `${on.core}/instances/${INSTANCE}/async-completions/${operationId}/cancel`,
      options.as ? { as: options.as } : {},
    );
  };
  const newSession = async () =>
    (
      (await app.call('POST', `${app.core}/instances/${INSTANCE}/sessions`, { body: { name: 'async run' } })).body as {
        id: string;
      }
    ).id;
  const messages = async (session: string) =>
    (await app.call('GET', `${app.core}/instances/${INSTANCE}/sessions/${session}/messages`)).body as unknown[];

  beforeAll(async () => {
    llm = await startMockLlm();
    app = await startTestApp({
      MODEL_MAX_RETRIES: '0',
      ALLOW_PRIVATE_NETWORK: 'true',
      WEBHOOK_RETRY_BASE_SECONDS: '1',
    });
    await seedAgent(app, 'runner', { llmUrl: llm.url, timeoutSeconds: 120 });
  });
  afterAll(async () => {
    await app.close();
    await llm.close();
  });

  it('answers 202 with Location (the status URL) and Retry-After', async () => {
    const r = await start({ user_prompt: 'where', agent_name: 'runner', operation_id: 'op-where' });
    expect(r.status).toBe(202);
    expect(r.headers.get('location')).toBe(`/instances/${INSTANCE}/async-completions/op-where/status`);
    expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    const polled = await app.call('GET', `${app.core}${r.headers.get('location')}`);
    expect(polled.status).toBe(200);
    expect(polled.body).toMatchObject({ operation_id: 'op-where' });
    await until(
      'completion',
      () => status('op-where'),
      (o) => o.status === 'Completed',
    );
  });

  it('answers 202 with Location and Retry-After through the Azure Functions adapter', async () => {
    const route = ROUTES.find((r) => r.name === 'completions-async-create')!;
    const req = new functions.HttpRequest({
      method: 'POST',
      url: asyncUrl(),
      headers: { authorization: `Bearer ${await app.token()}`, 'content-type': 'application/json' },
      body: {
        string: JSON.stringify({ user_prompt: 'functions', agent_name: 'runner', operation_id: 'op-functions' }),
      },
      params: { instanceId: INSTANCE },
    });
    const res = await functionsHandler(route, () => Promise.resolve(app.services))(req);
    expect(res.status).toBe(202);
    const headers = res.headers as Record<string, string>;
    expect(headers.location).toBe(`/instances/${INSTANCE}/async-completions/op-functions/status`);
    expect(Number(headers['retry-after'])).toBeGreaterThanOrEqual(1);
    // Done before the next test queues mock behaviours, which this operation's model call would take.
    await until(
      'completion',
      () => status('op-functions'),
      (o) => o.status === 'Completed',
    );
  });

  it('cancels a running operation: the model call is aborted, the status is Cancelled, nothing recorded', async () => {
    const session = await newSession();
    const calls = llm.requests.length;
    const abortedBefore = llm.aborted;
    llm.next({ hangMs: 60_000 });
    expect(
      (await start({ user_prompt: 'stop me', agent_name: 'runner', session_id: session, operation_id: 'op-cancel' }))
        .status,
    ).toBe(202);
    await until(
      'model call',
      () => Promise.resolve(llm.requests.length),
      (n) => n > calls,
    );

    expect((await cancel('op-cancel', { as: 'eve@example.com' })).status).toBe(404);
    const r = await cancel('op-cancel');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ operation_id: 'op-cancel', status: 'Cancelled' });
    await until(
      'aborted model call',
      () => Promise.resolve(llm.aborted),
      (n) => n > abortedBefore,
      5000,
    );

    // The worker has stopped; the operation stays Cancelled and the session has no turn.
    await new Promise((r) => setTimeout(r, 500));
    expect(await status('op-cancel')).toMatchObject({ status: 'Cancelled', result: null });
    expect(await messages(session)).toEqual([]);
    // Cancelling again, or an ended operation, answers the operation as it is.
    expect((await cancel('op-cancel')).body).toMatchObject({ status: 'Cancelled' });
    expect((await cancel('nope')).status).toBe(404);
  });

  it('leaves an ended operation as it is', async () => {
    await start({ user_prompt: 'done first', agent_name: 'runner', operation_id: 'op-ended' });
    await until(
      'completion',
      () => status('op-ended'),
      (o) => o.status !== 'InProgress',
    );
    const r = await cancel('op-ended');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ status: 'Completed', result: { completion: 'Echo: done first' } });
  });

  it('cancels from another instance: the worker sees it within a second or two and aborts its model call', async () => {
    // A second instance of the service on the same store, without workers: it takes the cancel.
    const other = await startTestApp(
      { ASYNC_COMPLETIONS_QUEUE: app.env.ASYNC_COMPLETIONS_QUEUE!, WEBHOOKS_QUEUE: app.env.WEBHOOKS_QUEUE! },
      {
        consumers: false,
        store: openSqliteStore(path.join(app.dataDir, 'store.db')),
      },
    );
    try {
      const session = await newSession();
      const calls = llm.requests.length;
      const abortedBefore = llm.aborted;
      llm.next({ hangMs: 60_000 });
      expect(
        (
          await start({
            user_prompt: 'stop me there',
            agent_name: 'runner',
            session_id: session,
            operation_id: 'op-elsewhere',
          })
        ).status,
      ).toBe(202);
      await until(
        'model call',
        () => Promise.resolve(llm.requests.length),
        (n) => n > calls,
      );
      const cancelledAt = Date.now();
      expect((await cancel('op-elsewhere', { on: other })).body).toMatchObject({ status: 'Cancelled' });
      await until(
        'aborted model call',
        () => Promise.resolve(llm.aborted),
        (n) => n > abortedBefore,
        5000,
      );
      expect(Date.now() - cancelledAt).toBeLessThan(3000);
      await new Promise((r) => setTimeout(r, 500));
      expect(await status('op-elsewhere')).toMatchObject({ status: 'Cancelled' });
      expect(await messages(session)).toEqual([]);
    } finally {
      await other.close();
    }
  });

  it('ends an operation whose model always fails as Failed, with the reason, within 90 s', async () => {
    const broken = await startMockLlm();
    try {
      await seedAgent(app, 'broken', { llmUrl: broken.url });
      broken.next(...Array.from({ length: 50 }, () => ({ status: 500, body: { error: { message: 'overloaded' } } })));
      const started = Date.now();
      expect((await start({ user_prompt: 'fail', agent_name: 'broken', operation_id: 'op-always-fails' })).status).toBe(
        202,
      );
      const done = await until(
        'failure',
        () => status('op-always-fails'),
        (o) => o.status !== 'InProgress',
        90_000,
      );
      expect(Date.now() - started).toBeLessThan(90_000);
      expect(done).toMatchObject({ status: 'Failed', result: null });
      expect(done.status_message).toMatch(/^Failed after \d attempts: The model endpoint failed \(500\)$/);
      expect(done.status_message).not.toMatch(/stack|at \w+ \(/);
      expect(broken.requests.length).toBeGreaterThan(1); // transient failures were retried inside the window
    } finally {
      await broken.close();
    }
  }, 100_000);

  describe('webhooks', () => {
    const secret = 'whsec-test-0123456789';
    beforeAll(async () => {
      const key = 'Svc:Webhooks:SigningSecret';
      const r = await app.call(
        'POST',
        `${app.management}/instances/${INSTANCE}/providers/Svc.Configuration/appConfigurations/${key}`,
        { body: { name: key, key, value: secret } },
      );
      expect(r.status).toBe(200);
    });

    it('delivers the ended operation once, signed, after retrying a receiver that failed twice', async () => {
      const receiver = await startReceiver([500, 503]);
      try {
        const r = await start({
          user_prompt: 'call me back',
          agent_name: 'runner',
          operation_id: 'op-hook',
          callback_url: receiver.url,
        });
        expect(r.status).toBe(202);
        const op = await until(
          'delivery',
          () => status('op-hook'),
          (o) => (o.deliveries ?? []).some((d) => d.outcome === 'delivered'),
          30_000,
        );
        expect(op.deliveries).toMatchObject([
          { attempt: 1, outcome: 'failed', status_code: 500 },
          { attempt: 2, outcome: 'failed', status_code: 503 },
          { attempt: 3, outcome: 'delivered', status_code: 200 },
        ]);
        // No delivery after the accepted one.
        await new Promise((r) => setTimeout(r, 1500));
        expect(receiver.received.map((d) => d.answered)).toEqual([500, 503, 200]);

        const accepted = receiver.received[2]!;
        const header = String(accepted.headers['svc-signature']);
        const [, t, v1] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header) ?? [];
        expect(v1).toBe(createHmac('sha256', secret).update(`${t}.${accepted.body}`).digest('hex'));
        expect(Math.abs(Number(t) - Date.now() / 1000)).toBeLessThan(60);
        expect(JSON.parse(accepted.body)).toMatchObject({
          operation_id: 'op-hook',
          status: 'Completed',
          result: { completion: 'Echo: call me back' },
        });
        expect(accepted.headers['content-type']).toBe('application/json');
      } finally {
        await receiver.close();
      }
    });

    it('queues the delivery before the final state is written (a crash between them cannot lose it)', async () => {
      const receiver = await startReceiver([]);
      const producer = app.services.producer;
      const send = producer.send.bind(producer);
      const seen: { status: string | undefined; delayed: boolean }[] = [];
      producer.send = async (queue, message, options) => {
        const key = (message as { key?: string }).key;
        if (
          queue === app.services.config.webhooks.queue &&
          key !== undefined &&
          (message as { waits?: number }).waits === undefined &&
          (message as { attempt?: number }).attempt === 1
        ) {
          const op = await app.services.store.container('operations').read(key, key);
          seen.push({ status: op?.status, delayed: (options?.visibilityTimeoutSeconds ?? 0) > 0 });
        }
        return send(queue, message, options);
      };
      try {
        expect(
          (
            await start({
              user_prompt: 'outbox',
              agent_name: 'runner',
              operation_id: 'op-outbox',
              callback_url: receiver.url,
            })
          ).status,
        ).toBe(202);
        await until(
          'delivery',
          () => Promise.resolve(receiver.received.length),
          (n) => n === 1,
          30_000,
        );
        expect(seen).toEqual([{ status: 'InProgress', delayed: true }]);
        expect(JSON.parse(receiver.received[0]!.body)).toMatchObject({
          operation_id: 'op-outbox',
          status: 'Completed',
        });
      } finally {
        producer.send = send;
        await receiver.close();
      }
    });

    it('posts a cancelled operation too', async () => {
      const receiver = await startReceiver([]);
      try {
        const calls = llm.requests.length;
        llm.next({ hangMs: 60_000 });
        await start({
          user_prompt: 'cancel and call',
          agent_name: 'runner',
          operation_id: 'op-hook-cancel',
          callback_url: receiver.url,
        });
        await until(
          'model call',
          () => Promise.resolve(llm.requests.length),
          (n) => n > calls,
        );
        await cancel('op-hook-cancel');
        await until(
          'delivery',
          () => Promise.resolve(receiver.received.length),
          (n) => n === 1,
        );
        expect(JSON.parse(receiver.received[0]!.body)).toMatchObject({
          operation_id: 'op-hook-cancel',
          status: 'Cancelled',
        });
      } finally {
        await receiver.close();
      }
    });

    it(
      'refuses private, loopback and link-local callback URLs unless ALLOW_PRIVATE_NETWORK=true, before ' +
        'starting anything',
      async () => {
        const strict = await startTestApp({ MODEL_MAX_RETRIES: '0' }, { consumers: false });
        try {
          await seedAgent(strict, 'runner', { llmUrl: llm.url });
          for (const url of [
            'http://127.0.0.1:9/hook',
            'https://127.0.0.1/hook',
            'https://10.1.2.3/hook',
            'https://localhost/hook',
            'https://169.254.169.254/latest',
            'ftp://example.com/x',
            'not a url',
          ]) {
            const r = await start(
              { user_prompt: 'x', agent_name: 'runner', operation_id: 'op-refused', callback_url: url },
              strict,
            );
            expect(r.status, url).toBe(400);
            expect(r.body).toMatchObject({ error: { code: 'ValidationError', details: [{ field: 'callback_url' }] } });
          }
          expect(
            (await strict.call('GET', `${strict.core}/instances/${INSTANCE}/async-completions/op-refused/status`))
              .status,
          ).toBe(404);
          // Link-local stays refused even where private networks are allowed.
          const r = await start({
            user_prompt: 'x',
            agent_name: 'runner',
            callback_url: 'http://169.254.169.254/latest',
          });
          expect(r.status).toBe(400);
          // callback_url belongs to the async request only.
          const sync = await app.call('POST', `${app.core}/instances/${INSTANCE}/completions`, {
            body: { user_prompt: 'x', agent_name: 'runner', callback_url: 'https://example.com/' },
          });
          expect(sync.status).toBe(400);
        } finally {
          await strict.close();
        }
      },
    );
  });
});
