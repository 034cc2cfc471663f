// A completion answered as server-sent events: `delta` events as the model produces text, then `completed`
// with the whole response, or `error` with the Core error envelope; every event numbered (`id:`), the
// operation id in the `x-operation-id` header. Anything that fails before the first piece of text still
// answers with its ordinary status. A client that goes away stops the model call (usage recorded as
// cancelled), unless the request asked for `background`: then the completion runs on, records its turn, and
// its events are kept (stream-log.ts) for a replay on any instance. Either can be cancelled by its starter.
import type { CompletionDeps } from './completion-deps.js';
import { ownerKey, type Principal } from '../auth/principal.js';
import { errorReply } from '../http/envelopes.js';
import { DomainError, notFound } from '../errors.js';
import { EventChannel, SSE_HEADERS, sseEvent } from '../http/event-stream.js';
import type { Reply } from '../http/types.js';
import { CallCancelledError } from '../models/upstream-errors.js';
import { runCompletion } from './completion.js';
import type { CompletionResponse } from './completion-request.js';
import type { Admitted } from './admit-request.js';
import type { RunOptions } from './turn.js';
import { operationKey } from './operations.js';
import { requestCancel, StreamLog } from './stream-log.js';

/** What this module uses of the service (the hosts pass the whole of it). */
export type CompletionsStreamDeps = CompletionDeps;

/** Streams running on each instance (its services), by operation key: a cancel there stops them at once. */
const streams = new WeakMap<CompletionsStreamDeps, Map<string, { owner: string; stop: () => void }>>();
const runningOn = (s: CompletionsStreamDeps) => {
  const map = streams.get(s) ?? new Map<string, { owner: string; stop: () => void }>();
  streams.set(s, map);
  return map;
};

/** How a stream's events are written: the Core API's own events, or a facade's. `id` numbers them from 1. */
export interface StreamFormat {
  delta(text: string, id: number): string;
  /** May record the outcome before the client hears of it. */
  completed(response: CompletionResponse, id: number): string | Promise<string>;
  /** May record the outcome too. */
  failed(error: unknown, id: number): string | Promise<string>;
}

/** The Core API's events: `delta`, then `completed` or `error` with the envelope a JSON answer would have carried. */
export const CORE_EVENTS: StreamFormat = {
  delta: (text, id) => sseEvent('delta', { text }, id),
  completed: (response, id) => sseEvent('completed', response, id),
  failed: (e, id) => {
    if (e instanceof DomainError) return sseEvent('error', errorReply(e, 'core', '').json, id);
    const code = e instanceof CallCancelledError ? 'Cancelled' : 'InternalError';
    return sseEvent(
      'error',
      {
        error: {
          code,
          message: code === 'Cancelled' ? 'The completion was cancelled' : 'An unexpected error occurred',
        },
      },
      id,
    );
  },
};

/** How a completion is streamed: the run's options, and the stream's. */
export interface StreamOptions extends RunOptions {
  /** The client went away: the completion stops, unless it runs in the background. */
  clientGone: AbortSignal;
  /** Runs once the completion has ended, however it ended (the stream's reader may have left before). */
  onEnd?: () => unknown;
  /** The events' format: the Core API's unless a facade gives its own. */
  format?: StreamFormat;
}

/**
 * Streams the completion's events as the model answers. Background streams are the Core API's only: their events
 * are kept in its format.
 */
export async function streamCompletion(
  s: CompletionsStreamDeps,
  principal: Principal,
  admitted: Admitted,
  options: StreamOptions,
): Promise<Reply> {
  const { clientGone, onEnd, format = CORE_EVENTS, ...runOptions } = options;
  const background = admitted.request.background === true;
  const call = new AbortController();
  const stop = () => call.abort(new CallCancelledError('The completion was cancelled'));
  // The host stopped reading before the end (it gave up, or the client read too slowly): the client went
  // away (a background completion runs on).
  let finished = false;
  const channel = new EventChannel(undefined, () => {
    if (!finished && !background) stop();
  });
  const key = operationKey(principal.upn, options.operationId);
  const log = background
    ? await StreamLog.open(s, principal, {
        operationId: options.operationId,
        sessionId: admitted.sessionId,
        onCancel: stop,
      })
    : undefined;
  const running = runningOn(s);
  running.set(key, { owner: ownerKey(principal.upn), stop });
  if (!background) clientGone.addEventListener('abort', stop, { once: true });
  let sequence = 0;
  const send = (event: string) => {
    channel.push(event);
    log?.push(event);
  };
  const failure = async (e: unknown) => {
    if (!(e instanceof DomainError) && !(e instanceof CallCancelledError))
      s.log.error('Streamed completion failed', { error: e instanceof Error ? (e.stack ?? e.message) : String(e) });
    return format.failed(e, ++sequence);
  };
  let began: () => void = () => undefined;
  const firstPiece = new Promise<void>((resolve) => (began = resolve));
  const run = runCompletion(s, principal, admitted, {
    ...runOptions,
    signal: call.signal,
    onDelta: (text) => {
      send(format.delta(text, ++sequence));
      began();
    },
    // Tool calls as SSE comments: visible to a live reader, outside the numbered events.
    onToolStart: (e) => {
      channel.push(`: tool_start ${JSON.stringify(e)}\n\n`);
      began();
    },
    onToolEnd: (e) => channel.push(`: tool_end ${JSON.stringify(e)}\n\n`),
    // Cancelled after the model answered: the turn is not recorded.
    beforeRecord: async () => {
      await options.beforeRecord?.();
      if (call.signal.aborted) throw new CallCancelledError('The completion was cancelled');
    },
  });
  const ended = () => {
    finished = true;
    if (running.get(key)?.stop === stop) running.delete(key);
    onEnd?.();
    clientGone.removeEventListener('abort', stop);
    channel.end();
  };
  // Until the first piece, a failure is an ordinary answer (the pipeline's JSON status).
  try {
    await Promise.race([firstPiece, run]);
  } catch (e) {
    // Nothing was sent: the stream's log says so, for a replay or a cancel that comes later.
    const event = await failure(e);
    log?.push(event);
    ended();
    throw e;
  }
  run
    .then(
      async (response) => send(await format.completed(response, ++sequence)),
      async (e: unknown) => send(await failure(e)),
    )
    // Ending failed (recording the outcome): the stream ends without its last event.
    .catch((e: unknown) =>
      s.log.error('A streamed completion could not be ended', { error: e instanceof Error ? e.message : String(e) }),
    )
    .finally(ended);
  return { status: 200, headers: { ...SSE_HEADERS, 'x-operation-id': options.operationId }, stream: channel };
}

/**
 * Cancels the caller's streamed completion: at once when it runs in this process, else through its kept
 * events (background streams), which its instance reads within a second. Anyone else's is 404.
 */
export async function cancelStream(
  s: CompletionsStreamDeps,
  principal: Principal,
  operationId: string,
): Promise<{ operation_id: string; status: 'Cancelled' | 'Completed' | 'Failed' }> {
  const here = runningOn(s).get(operationKey(principal.upn, operationId));
  if (here && here.owner === ownerKey(principal.upn)) {
    here.stop();
    await requestCancel(s, principal, operationId).catch(() => undefined);
    return { operation_id: operationId, status: 'Cancelled' };
  }
  try {
    const { status, sessionId } = await requestCancel(s, principal, operationId);
    if (status === 'Cancelled' && sessionId) await s.turns.cancel(ownerKey(principal.upn), sessionId, operationId);
    return { operation_id: operationId, status };
  } catch (e) {
    if (e instanceof DomainError && e.kind === 'not-found') throw notFound(`Completion ${operationId} not found`);
    throw e;
  }
}
