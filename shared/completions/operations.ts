// Long-running completions (spec 4.1, 3; CONTRACT.md section 7): the status container, the queue worker
// that runs them, and the rules that keep any operation from staying InProgress forever.
import { createHash } from 'node:crypto';
import { context, SpanKind, trace } from '@opentelemetry/api';
import { ownerKey, type Principal } from '../auth/principal.js';
import { ApiError, conflict, notFound, toError } from '../http/errors.js';
import { CallCancelledError, UpstreamError } from '../models/gateway.js';
import { MAX_DEQUEUE_COUNT, type QueueDelivery } from '../queues/handler.js';
import type { Services } from '../services.js';
import { ConflictError, type Doc, type Stored } from '../store/types.js';
import { updateDocument } from '../store/update.js';
import { linkTo, withCorrelation } from '../telemetry/correlation.js';
import { admit, runCompletion, type CompletionRequest, type CompletionResponse } from './completion.js';

const tracer = trace.getTracer('agent-platform');

export type OperationStatus = 'InProgress' | 'Completed' | 'Failed';

export interface OperationDoc extends Doc {
  operation_id: string;
  status: OperationStatus;
  status_message: string;
  result: CompletionResponse | null;
  created_on: string;
  last_updated: string;
  /** The caller at the start: the worker runs as this principal. */
  principal: Principal;
  request: CompletionRequest;
  /** W3C trace context of the start activity, linked from polls and from the worker. */
  trace: { traceparent?: string; tracestate?: string };
  attempts: number;
}

/** The long-running operation as the status endpoint shows it. */
export const presentOperation = (op: OperationDoc) => ({
  operation_id: op.operation_id,
  status: op.status,
  status_message: op.status_message,
  last_updated: op.last_updated,
  result: op.result,
});

const container = (s: Services) => s.store.container<OperationDoc>('operations');
const mine = (op: OperationDoc, p: Principal) => ownerKey(op.principal.upn) === ownerKey(p.upn);

/**
 * Where an operation is stored: operation ids are the caller's own names, so two users may both use
 * `op-1` without either learning that the other did. The queue message carries this key.
 */
export const operationKey = (upn: string, operationId: string) =>
  createHash('sha256').update(`${ownerKey(upn)}\n${operationId}`).digest('hex').slice(0, 40);

export async function startOperation(s: Services, principal: Principal, request: CompletionRequest, operationId: string, traceContext: OperationDoc['trace']): Promise<OperationDoc> {
  const now = new Date().toISOString();
  const key = operationKey(principal.upn, operationId);
  try {
    return await container(s).create({
      id: key,
      pk: key,
      operation_id: operationId,
      status: 'InProgress',
      status_message: 'Queued',
      result: null,
      created_on: now,
      last_updated: now,
      principal,
      request: { ...request, operation_id: operationId },
      trace: traceContext,
      attempts: 0,
    });
  } catch (e) {
    if (e instanceof ConflictError) throw conflict(`Operation ${operationId} already exists`);
    throw e;
  }
}

/** Changes an operation that is still InProgress; a finished one is never changed again. */
async function transition(s: Services, key: string, change: (op: Stored<OperationDoc>) => Partial<OperationDoc>): Promise<OperationDoc | undefined> {
  return updateDocument(container(s), key, key, (op) =>
    op && op.status === 'InProgress' ? { ...op, ...change(op), last_updated: new Date().toISOString() } : undefined,
  );
}

const fail = (s: Services, key: string, reason: string) => transition(s, key, () => ({ status: 'Failed', status_message: reason }));

/** The caller's own operation; anyone else's, and an unknown id, is 404. A stale InProgress one is failed. */
export async function readOperation(s: Services, principal: Principal, operationId: string): Promise<OperationDoc> {
  const key = operationKey(principal.upn, operationId);
  let op: OperationDoc | undefined = await container(s).read(key, key);
  if (!op || !mine(op, principal)) throw notFound(`Operation ${operationId} not found`);
  const age = Date.now() - Date.parse(op.last_updated);
  if (op.status === 'InProgress' && age > s.config.asyncOperationTimeoutSeconds * 1000) {
    op = (await fail(s, key, `Timed out: no progress for ${s.config.asyncOperationTimeoutSeconds} s`)) ?? op;
  }
  return op;
}

/** Failures another delivery cannot mend: client errors, and upstream answers that are deterministic. */
const permanent = (e: unknown) =>
  e instanceof UpstreamError ? e.permanent : e instanceof ApiError && e.status < 500 && e.status !== 429;

/** What the operation's starter is told: the reason of a failure the service expected, else nothing internal. */
export function userFacingReason(e: unknown): string {
  return e instanceof ApiError && e.status < 500 ? e.message : e instanceof UpstreamError ? e.message : 'an internal error stopped the completion';
}

/** The queue message's operation key. */
const keyOf = (message: unknown) => (typeof message === 'object' && message !== null ? String((message as { key?: unknown }).key) : '');

/** The queue-triggered worker: runs the completion and records the outcome. At-least-once safe. */
export async function processOperation(message: unknown, delivery: QueueDelivery, s: Services): Promise<void> {
  const key = keyOf(message);
  const op = await container(s).read(key, key);
  if (!op || op.status !== 'InProgress') return;
  const operationId = op.operation_id;
  const ids = { operationId, instanceId: s.config.instanceId, conversationId: op.request.session_id };
  // The worker's activity is its own trace, linked to the start activity; OperationId continues as baggage.
  await tracer.startActiveSpan('async-completions-worker', { kind: SpanKind.CONSUMER, root: true, links: linkTo(op.trace) }, context.active(), async (span) => {
    try {
      await withCorrelation(ids, undefined, async () => {
        await transition(s, key, (o) => ({ attempts: o.attempts + 1, status_message: `Running (attempt ${delivery.dequeueCount})` }));
        try {
          const result = await runCompletion(s, op.principal, await admit(s, op.principal, op.request), { operationId, mayRepeat: true, ...(delivery.signal ? { signal: delivery.signal } : {}) });
          await transition(s, key, () => ({ status: 'Completed', status_message: 'Completed', result }));
        } catch (e) {
          // Shutdown interrupted the attempt: the message comes back and the next worker resumes it.
          if (e instanceof CallCancelledError || delivery.signal?.aborted) throw e;
          const reason = userFacingReason(e);
          if (!(e instanceof ApiError)) s.log.error('Async completion failed', { error: toError(e).stack ?? String(e) });
          if (permanent(e)) {
            await fail(s, key, `Failed: ${reason}`);
            return;
          }
          if (delivery.dequeueCount >= MAX_DEQUEUE_COUNT) {
            await fail(s, key, `Failed after ${delivery.dequeueCount} attempts: ${reason}`);
            return;
          }
          await transition(s, key, () => ({ status_message: `Attempt ${delivery.dequeueCount} failed, retrying: ${reason}` }));
          throw e;
        }
      });
    } finally {
      span.end();
    }
  });
}

/** Messages that exhausted their deliveries (e.g. the worker died on its last try) fail their operation. */
export async function failPoisoned(message: unknown, _delivery: QueueDelivery, s: Services): Promise<void> {
  await fail(s, keyOf(message), `Failed: the worker gave up after ${MAX_DEQUEUE_COUNT} deliveries`);
}
