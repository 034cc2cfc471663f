// Long-running completions: the status container and the transitions of
// an operation. It starts InProgress and ends once: Completed, Failed or Cancelled. Ending triggers the
// webhook delivery when the starter gave a callback_url.
import { createHash } from 'node:crypto';
import { ownerKey, type Principal } from '../auth/principal.js';
import { conflict, DomainError, notFound } from '../errors.js';
import { CallCancelledError, UpstreamError } from '../models/upstream-errors.js';
import { ConflictError, type Doc, type Stored } from '../store/types.js';
import { updateDocument } from '../store/update.js';
import { enqueueDelivery } from '../queues/producer.js';
import type { DeliveryAttempt } from '../webhooks/deliveries.js';
import type { CompletionRequest, CompletionResponse, Facade } from './completion-request.js';
import type { QuotaReservation } from './quotas.js';
import type { Quotas } from './quotas.js';
import type { Config } from '../config.js';
import type { Producer } from '../queues/producer.js';
import type { DocumentStore } from '../store/types.js';

/** What this module uses of the service (the hosts pass the whole of it). */
export interface OperationsDeps {
  readonly config: Config;
  readonly producer: Producer;
  readonly quotas: Quotas;
  readonly store: DocumentStore;
}

export type OperationStatus = 'InProgress' | 'Completed' | 'Failed' | 'Cancelled';

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
  /** Set while the worker records the answer: from then on the operation completes and cannot be cancelled. */
  recording?: boolean;
  /** Where the ended operation is POSTed. */
  callback_url?: string;
  /** Every attempt to deliver it there. */
  deliveries?: DeliveryAttempt[];
  /** What its admission reserved of token quotas: given back once, when the operation ends. */
  quota_reservation?: QuotaReservation;
  /** A completion that came in by a facade: what the worker admits it with. */
  facade?: Facade;
  /**
   * An OpenAI response kept for retrieval (every Responses call is an operation, whether it runs here or on the queue).
   */
  response?: ResponseMeta;
}

declare module '../store/types.js' {
  interface StoredDocs {
    operations: OperationDoc;
  }
}

/** What an OpenAI response keeps besides its completion. */
export interface ResponseMeta {
  previous_response_id: string | null;
  /** Started with `background`: on the queue, and cancellable. */
  background: boolean;
  /** The request's `text.format`, echoed on the response. */
  format: Record<string, unknown>;
  metadata: Record<string, string>;
}

/** What an operation may start with besides its request. */
export interface StartOptions {
  callbackUrl?: string | undefined;
  reservation?: QuotaReservation | undefined;
  facade?: Facade | undefined;
  response?: ResponseMeta | undefined;
  /** `Queued` unless it runs where it starts. */
  statusMessage?: string;
}

/** The long-running operation as the status endpoint (and the webhook) shows it. */
export const presentOperation = (op: OperationDoc) => ({
  operation_id: op.operation_id,
  status: op.status,
  status_message: op.status_message,
  last_updated: op.last_updated,
  result: op.result,
  ...(op.callback_url !== undefined ? { deliveries: op.deliveries ?? [] } : {}),
});

export const operations = (s: OperationsDeps) => s.store.container('operations');
const mine = (op: OperationDoc, p: Principal) => ownerKey(op.principal.upn) === ownerKey(p.upn);

/**
 * Where an operation is stored: operation ids are the caller's own names, so two users may both use
 * `op-1` without either learning that the other did. The queue message carries this key.
 */
export const operationKey = (upn: string, operationId: string) =>
  createHash('sha256')
    .update(`${ownerKey(upn)}\n${operationId}`)
    .digest('hex')
    .slice(0, 40);

/** The queue message's operation key. */
export async function startOperation(
  s: OperationsDeps,
  principal: Principal,
  { request, operationId, trace }: { request: CompletionRequest; operationId: string; trace: OperationDoc['trace'] },
  options: StartOptions = {},
): Promise<OperationDoc> {
  const { callbackUrl, reservation, facade, response, statusMessage = 'Queued' } = options;
  const now = new Date().toISOString();
  const key = operationKey(principal.upn, operationId);
  try {
    return await operations(s).create({
      id: key,
      pk: key,
      operation_id: operationId,
      status: 'InProgress',
      status_message: statusMessage,
      result: null,
      created_on: now,
      last_updated: now,
      principal,
      request: { ...request, operation_id: operationId },
      trace,
      attempts: 0,
      ...(callbackUrl !== undefined ? { callback_url: callbackUrl, deliveries: [] } : {}),
      ...(reservation?.entries.length ? { quota_reservation: reservation } : {}),
      ...(facade ? { facade } : {}),
      ...(response ? { response } : {}),
    });
  } catch (e) {
    if (e instanceof ConflictError) throw conflict(`Operation ${operationId} already exists`);
    throw e;
  }
}

/** Seconds a delivery queued before its operation's final write waits to become visible. */
const OUTBOX_DELAY_SECONDS = 3;

const ends = (op: OperationDoc, patch: Partial<OperationDoc>) =>
  op.status === 'InProgress' && patch.status !== undefined && patch.status !== 'InProgress';

/**
 * Changes an operation that is still InProgress (and may, `when` it allows); a finished one never changes
 * again. A change that ends an operation with a callback_url queues its webhook first (visible a few seconds
 * later) and then writes the final state: a crash between the two leaves a queued check of an operation still
 * in progress (which ends later and queues again), never a final state whose webhook was lost.
 */
export async function transition(
  s: OperationsDeps,
  key: string,
  change: (op: Stored<OperationDoc>) => Partial<OperationDoc>,
  options: { when?: (op: Stored<OperationDoc>) => boolean } = {},
): Promise<OperationDoc | undefined> {
  const { when = () => true } = options;
  const before = await operations(s).read(key, key);
  const queued = before?.callback_url !== undefined && when(before) && ends(before, change(before));
  if (queued) await enqueueDelivery(s, key, OUTBOX_DELAY_SECONDS);
  const outcome = { changed: false };
  const saved = await updateDocument(operations(s), { pk: key, id: key }, (op) => {
    outcome.changed = false;
    if (!op || op.status !== 'InProgress' || !when(op)) return undefined;
    outcome.changed = true;
    return { ...op, ...change(op), last_updated: new Date().toISOString() };
  });
  if (!outcome.changed || !saved) return undefined;
  // Ending happens once (only an InProgress operation changes): the reservation is given back once.
  if (saved.status !== 'InProgress') await s.quotas.release(saved.quota_reservation);
  if (saved.status !== 'InProgress' && saved.callback_url !== undefined && !queued) await enqueueDelivery(s, saved.id);
  return saved;
}

export const fail = (s: OperationsDeps, key: string, reason: string) =>
  transition(s, key, () => ({ status: 'Failed', status_message: reason }));

/**
 * Marks the operation as recording its answer, from when it can no longer be cancelled; throws
 * CallCancelledError when it was cancelled (on any instance) before: its turn is then not recorded.
 */
export async function markRecording(s: OperationsDeps, key: string): Promise<void> {
  if (!(await transition(s, key, () => ({ recording: true }))))
    throw new CallCancelledError('The operation was cancelled');
}

/** What the operation's starter is told: the reason of a failure the service expected, else nothing internal. */
export function userFacingReason(e: unknown): string {
  return e instanceof DomainError && e.callerFault
    ? e.message
    : e instanceof UpstreamError
      ? e.message
      : 'an internal error stopped the completion';
}

/**
 * Ends an operation that ran where it started (a facade's response or task, not the queue's): Completed with
 * its answer, Cancelled, or Failed with the reason its starter may read. The operation as it ended.
 */
export async function endOperation(
  s: OperationsDeps,
  op: OperationDoc,
  outcome: { result: CompletionResponse } | { error: unknown },
): Promise<OperationDoc> {
  const change: Partial<OperationDoc> =
    'result' in outcome
      ? { status: 'Completed', status_message: 'Completed', result: outcome.result }
      : outcome.error instanceof CallCancelledError
        ? { status: 'Cancelled', status_message: 'Cancelled' }
        : { status: 'Failed', status_message: `Failed: ${userFacingReason(outcome.error)}` };
  return (await transition(s, op.id, () => change)) ?? (await operations(s).read(op.id, op.id)) ?? { ...op, ...change };
}

/** The caller's own operation; anyone else's, and an unknown id, is 404. A stale InProgress one is failed. */
export async function readOperation(
  s: OperationsDeps,
  principal: Principal,
  operationId: string,
): Promise<OperationDoc> {
  const key = operationKey(principal.upn, operationId);
  const op = await operations(s).read(key, key);
  if (!op || !mine(op, principal)) throw notFound(`Operation ${operationId} not found`);
  const age = Date.now() - Date.parse(op.last_updated);
  if (op.status === 'InProgress' && age > s.config.asyncOperationTimeoutSeconds * 1000) {
    return (await fail(s, key, `Timed out: no progress for ${s.config.asyncOperationTimeoutSeconds} s`)) ?? op;
  }
  return op;
}

/**
 * Cancels the caller's operation unless it has ended (or is recording its answer, after which it completes):
 * the worker stops at its next step, and a model call in flight is aborted (at once on this instance, within
 * a second elsewhere). A cancelled operation never records a turn.
 */
export async function cancelOperation(
  s: OperationsDeps,
  principal: Principal,
  { operationId, abortLocal }: { operationId: string; abortLocal: (key: string) => void },
): Promise<OperationDoc> {
  const op = await readOperation(s, principal, operationId);
  const cancelled = await transition(
    s,
    op.id,
    () => ({ status: 'Cancelled', status_message: 'Cancelled by its starter' }),
    { when: (o) => o.recording !== true },
  );
  if (cancelled) abortLocal(op.id);
  return cancelled ?? (await operations(s).read(op.id, op.id)) ?? op;
}
