// A completion answered as server-sent events: `delta` events as the model produces text,
// then `completed` with the whole response, or `error` with the Core error envelope. Anything that fails
// before the first piece of text still answers with its ordinary status; a client that goes away stops
// the model call, and the usage is recorded as cancelled.
import type { Principal } from '../auth/principal.js';
import { errorReply } from '../http/envelopes.js';
import { DomainError } from '../errors.js';
import { EventChannel, SSE_HEADERS, sseEvent } from '../http/event-stream.js';
import type { Reply } from '../http/types.js';
import type { Services } from '../services.js';
import { runCompletion, type Admitted, type RunOptions } from './completion.js';

/** The `error` event's data: the envelope a JSON answer would have carried. */
function errorData(e: unknown, s: Services): unknown {
  if (e instanceof DomainError) return errorReply(e, 'core', '').json;
  s.log.error('Streamed completion failed', { error: e instanceof Error ? (e.stack ?? e.message) : String(e) });
  return { error: { code: 'InternalError', message: 'An unexpected error occurred' } };
}

/** `onEnd` runs once the completion has ended, however it ended (the stream's reader may have left before). */
export async function streamCompletion(s: Services, principal: Principal, admitted: Admitted, options: RunOptions, clientGone: AbortSignal, onEnd?: () => unknown): Promise<Reply> {
  const channel = new EventChannel();
  const call = new AbortController();
  const stop = () => call.abort();
  clientGone.addEventListener('abort', stop, { once: true });
  let began: () => void = () => undefined;
  const firstPiece = new Promise<void>((resolve) => (began = resolve));
  const run = runCompletion(s, principal, admitted, {
    ...options,
    signal: call.signal,
    onDelta: (text) => {
      channel.push(sseEvent('delta', { text }));
      began();
    },
    // Tool calls as SSE comments: visible to any reader of the stream, outside the event names of 10.2.
    onToolStart: (e) => {
      channel.push(`: tool_start ${JSON.stringify(e)}\n\n`);
      began();
    },
    onToolEnd: (e) => channel.push(`: tool_end ${JSON.stringify(e)}\n\n`),
  });
  // Until the first piece, a failure is an ordinary answer (the pipeline's JSON status).
  await Promise.race([firstPiece, run]);
  let finished = false;
  run.then(
    (response) => channel.push(sseEvent('completed', response)),
    (e: unknown) => channel.push(sseEvent('error', errorData(e, s))),
  ).finally(() => {
    finished = true;
    onEnd?.();
    clientGone.removeEventListener('abort', stop);
    channel.end();
  });
  async function* events(): AsyncGenerator<string> {
    try {
      yield* channel;
    } finally {
      // The host stopped reading before the end: the client went away.
      if (!finished) call.abort();
    }
  }
  return { status: 200, headers: { ...SSE_HEADERS }, stream: events() };
}
