// The queue-triggered worker of async completions: runs the completion as its starter, records the outcome, and keeps
// the promises of docs/api-decisions.md (Async completions): at-least-once safe, cancellable at every step (a model
// call in flight is aborted), and an operation whose model keeps failing ends Failed within 90 s of its start.
import type { CompletionDeps } from './completion-deps.js';
import { context, SpanKind, trace } from '@opentelemetry/api';
import { DomainError, toError } from '../errors.js';
import { CallCancelledError, UpstreamError } from '../models/upstream-errors.js';
import { MAX_DEQUEUE_COUNT, type QueueDelivery } from '../queues/producer.js';
import { linkTo, withCorrelation } from '../telemetry/correlation.js';
import { runCompletion } from './completion.js';
import { admit } from './admit-request.js';
import type { OperationMessage } from '../queues/messages.js';
import { fail, markRecording, operations, transition, userFacingReason, type OperationDoc } from './operations.js';
import type { Producer } from '../queues/producer.js';

/** What this module uses of the service (the hosts pass the whole of it). */
export interface WorkerDeps extends CompletionDeps {
  readonly producer: Producer;
}

const tracer = trace.getTracer('agent-platform');

/** Failed attempts are retried until this long after the operation started; later attempts stop at this mark. */
export const RETRY_WINDOW_MS = 90_000;
/** How often a running attempt checks whether its operation was cancelled on another instance. */
const CANCEL_CHECK_MS = 1000;

/** Attempts running in this process, by services and operation key: a cancel here aborts them at once. */
const running = new WeakMap<WorkerDeps, Map<string, AbortController>>();

/** Aborts an attempt of the operation running in this process, if any. */
export function abortRunning(s: WorkerDeps, key: string): void {
  running.get(s)?.get(key)?.abort();
}

/** Failures another delivery cannot mend: client errors, and upstream answers that are deterministic. */
const permanent = (e: unknown) =>
  e instanceof UpstreamError ? e.permanent : e instanceof DomainError && e.callerFault;

/** The signal of one attempt: shutdown, a cancel (here or elsewhere), and for retries the end of the window. */
function attemptSignal(
  s: WorkerDeps,
  op: OperationDoc,
  delivery: QueueDelivery,
): { signal: AbortSignal; done(): void } {
  const controller = new AbortController();
  const abort = () => controller.abort();
  delivery.signal?.addEventListener('abort', abort, { once: true });
  const local = running.get(s) ?? new Map<string, AbortController>();
  running.set(s, local);
  local.set(op.id, controller);
  const watch = setInterval(() => {
    operations(s)
      .read(op.id, op.id)
      .then(
        (o) => o?.status === 'Cancelled' && abort(),
        () => undefined,
      );
  }, CANCEL_CHECK_MS);
  const left = Date.parse(op.created_on) + RETRY_WINDOW_MS - Date.now();
  const window = delivery.dequeueCount > 1 ? setTimeout(abort, Math.max(0, left)) : undefined;
  return {
    signal: controller.signal,
    done() {
      clearInterval(watch);
      clearTimeout(window);
      delivery.signal?.removeEventListener('abort', abort);
      if (local.get(op.id) === controller) local.delete(op.id);
    },
  };
}

export async function processOperation(
  { key }: OperationMessage,
  delivery: QueueDelivery,
  s: WorkerDeps,
): Promise<void> {
  const op = await operations(s).read(key, key);
  if (!op || op.status !== 'InProgress') return;
  const operationId = op.operation_id;
  const ids = {
    operationId,
    instanceId: s.config.instanceId,
    conversationId: op.request.session_id,
    protocol: op.facade?.protocol ?? 'core',
  };
  // The worker's activity is its own trace, linked to the start activity; OperationId continues as baggage.
  await tracer.startActiveSpan(
    'async-completions-worker',
    { kind: SpanKind.CONSUMER, root: true, links: linkTo(op.trace) },
    context.active(),
    async (span) => {
      const attempt = attemptSignal(s, op, delivery);
      try {
        await withCorrelation(ids, undefined, async () => {
          if (
            !(await transition(s, key, (o) => ({
              attempts: o.attempts + 1,
              status_message: `Running (attempt ${delivery.dequeueCount})`,
            })))
          )
            return;
          try {
            const admitted = await admit(s, op.principal, op.request, { facade: op.facade });
            const result = await runCompletion(s, op.principal, admitted, {
              operationId,
              mayRepeat: true,
              signal: attempt.signal,
              // The answer is recorded only while the operation is still running; from then on it cannot be
              // cancelled.
              beforeRecord: () => markRecording(s, key),
            });
            await transition(s, key, () => ({ status: 'Completed', status_message: 'Completed', result }));
          } catch (e) {
            // Shutdown interrupted the attempt: the message comes back and the next worker resumes it.
            if (delivery.signal?.aborted) throw e;
            const now = await operations(s).read(key, key);
            if (!now || now.status !== 'InProgress') return; // cancelled (or ended) meanwhile
            const windowOver = Date.now() >= Date.parse(op.created_on) + RETRY_WINDOW_MS - 2000;
            const reason =
              e instanceof CallCancelledError && windowOver
                ? `the model did not answer within ${RETRY_WINDOW_MS / 1000} s`
                : userFacingReason(e);
            if (!(e instanceof DomainError) && !(e instanceof CallCancelledError))
              s.log.error('Async completion failed', { error: toError(e).stack ?? String(e) });
            if (permanent(e)) {
              await fail(s, key, `Failed: ${reason}`);
              return;
            }
            if (delivery.dequeueCount >= MAX_DEQUEUE_COUNT || windowOver) {
              await fail(s, key, `Failed after ${delivery.dequeueCount} attempts: ${reason}`);
              return;
            }
            await transition(s, key, () => ({
              status_message: `Attempt ${delivery.dequeueCount} failed, retrying: ${reason}`,
            }));
            throw e;
          }
        });
      } finally {
        attempt.done();
        span.end();
      }
    },
  );
}

/** Messages that exhausted their deliveries (e.g. the worker died on its last try) fail their operation. */
export async function failPoisoned({ key }: OperationMessage, _delivery: QueueDelivery, s: WorkerDeps): Promise<void> {
  await fail(s, key, `Failed: the worker gave up after ${MAX_DEQUEUE_COUNT} deliveries`);
}
