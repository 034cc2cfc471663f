// Telemetry correlation of completions (all five rules of docs/architecture.md, Telemetry), with an in-memory span
// exporter.
import { Writable } from 'node:stream';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLog } from '../../../shared/log.js';
import { withCorrelation } from '../../../shared/telemetry/correlation.js';
import { startLocalTracing } from '../../../shared/telemetry/local-tracing.js';
import { startMockLlm, type MockLlm } from '../../../scripts/mock-llm.js';
import { seedAgent } from '../../support/agents.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { INSTANCE } from '../../support/services.js';

const CALLER_TRACE = '0af7651916cd43dd8448eb211c80319c';
const CALLER = `00-${CALLER_TRACE}-b7ad6b7169203331-01`;

describe('telemetry correlation', () => {
  const exporter = new InMemorySpanExporter();
  let stop: () => void;
  let app: TestApp;
  let llm: MockLlm;
  let sessionId: string;
  const spans = (name: string) => exporter.getFinishedSpans().filter((s) => s.name === name);
  const traceOf = (s: ReadableSpan) => s.spanContext().traceId;

  beforeAll(async () => {
    stop = startLocalTracing(exporter);
    llm = await startMockLlm();
    app = await startTestApp();
    await seedAgent(app, 'traced', { llmUrl: llm.url });
    sessionId = (
      (await app.call('POST', `${app.core}/instances/${INSTANCE}/sessions`, { body: { name: 't' } })).body as {
        id: string;
      }
    ).id;
  });
  afterAll(async () => {
    await app.close();
    await llm.close();
    stop();
  });

  it('1-3: a completion is a new root linked to the caller; baggage reaches the model, tags every span', async () => {
    exporter.reset();
    const r = await app.call('POST', `${app.core}/instances/${INSTANCE}/completions`, {
      headers: { traceparent: CALLER, baggage: 'OperationId=forged,UPN=mallory' },
      body: { user_prompt: 'trace me', agent_name: 'traced', session_id: sessionId, operation_id: 'op-traced' },
    });
    expect(r.status).toBe(200);
    const [root] = spans('completions-create');
    expect(root).toBeDefined();
    // 1. A new root whatever the caller sent; the caller's traceparent is a link.
    expect(traceOf(root!)).not.toBe(CALLER_TRACE);
    expect(root!.parentSpanContext).toBeUndefined();
    expect(root!.links.map((l) => l.context.traceId)).toEqual([CALLER_TRACE]);
    // Boundary tags: the three ids and the UPN.
    expect(root!.attributes).toMatchObject({
      'Svc-OperationId': 'op-traced',
      'Svc-InstanceId': INSTANCE,
      'Svc-ConversationId': sessionId,
      'Svc-UPN': 'owner@local.test',
    });

    // 2. Baggage (not the forged one, and no UPN) and trace context travel to the model.
    const headers = llm.requests.at(-1)!.headers;
    const baggage = decodeURIComponent(String(headers.baggage));
    expect(baggage).toContain('OperationId=op-traced');
    expect(baggage).toContain(`InstanceId=${INSTANCE}`);
    expect(baggage).toContain(`ConversationId=${sessionId}`);
    expect(baggage).not.toContain('forged');
    expect(baggage).not.toMatch(/UPN|owner@local\.test/);
    expect(String(headers.traceparent).split('-')[1]).toBe(traceOf(root!));

    // 3. Every span of the operation carries the three ids; the UPN only the boundary.
    const [model] = spans('chat traced-deployment');
    expect(traceOf(model!)).toBe(traceOf(root!));
    expect(model!.attributes).toMatchObject({
      'Svc-OperationId': 'op-traced',
      'Svc-InstanceId': INSTANCE,
      'Svc-ConversationId': sessionId,
    });
    expect(model!.attributes).not.toHaveProperty('Svc-UPN');
  });

  it('3: log records carry the ids as custom dimensions', async () => {
    let out = '';
    const sink = new Writable({ write: (chunk: Buffer, _e, done) => ((out += chunk.toString()), done()) });
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = sink.write.bind(sink) as typeof process.stderr.write;
    try {
      await withCorrelation({ operationId: 'op-log', instanceId: INSTANCE, conversationId: 'c-1' }, 'x@y', () =>
        Promise.resolve(createLog().warn('inside')),
      );
    } finally {
      process.stderr.write = write;
    }
    expect(JSON.parse(out)).toMatchObject({
      message: 'inside',
      'Svc-OperationId': 'op-log',
      'Svc-InstanceId': INSTANCE,
      'Svc-ConversationId': 'c-1',
    });
    expect(out).not.toContain('x@y');
  });

  it(
    '4-5: async start ends at 202; the worker and every poll are their own roots linked to the saved start ' +
      'context',
    async () => {
      exporter.reset();
      const started = await app.call('POST', `${app.core}/instances/${INSTANCE}/async-completions`, {
        headers: { traceparent: CALLER },
        body: { user_prompt: 'later', agent_name: 'traced', operation_id: 'op-async-traced' },
      });
      expect(started.status).toBe(202);
      let status = 'InProgress';
      while (status === 'InProgress') {
        await new Promise((r) => setTimeout(r, 50));
        status = (
          (await app.call('GET', `${app.core}/instances/${INSTANCE}/async-completions/op-async-traced/status`))
            .body as {
            status: string;
          }
        ).status;
      }
      expect(status).toBe('Completed');
      const [start] = spans('completions-async-create');
      const [worker] = spans('async-completions-worker');
      const polls = spans('completions-async-status');
      expect(start!.links.map((l) => l.context.traceId)).toEqual([CALLER_TRACE]);
      expect(worker!.parentSpanContext).toBeUndefined();
      expect(traceOf(worker!)).not.toBe(traceOf(start!));
      expect(worker!.links.map((l) => l.context.spanId)).toEqual([start!.spanContext().spanId]);
      expect(polls.length).toBeGreaterThan(0);
      for (const poll of polls) {
        expect(poll.parentSpanContext).toBeUndefined();
        expect(poll.links.map((l) => l.context.spanId)).toContain(start!.spanContext().spanId);
        expect(poll.attributes['Svc-OperationId']).toBe('op-async-traced');
      }
      // OperationId continues in both trees: a query by it finds the start, the worker, its model call and the polls.
      const byOperation = exporter
        .getFinishedSpans()
        .filter((s) => s.attributes['Svc-OperationId'] === 'op-async-traced');
      expect(new Set(byOperation.map((s) => s.name))).toEqual(
        new Set([
          'completions-async-create',
          'async-completions-worker',
          'chat traced-deployment',
          'completions-async-status',
        ]),
      );
      expect(new Set(byOperation.map(traceOf)).size).toBeGreaterThanOrEqual(3);
    },
  );
});
