// A streamed completion, run in the background on the service, so that a dropped connection resumes where it
// was instead of losing the answer.
import type { EventSourceMessage } from 'eventsource-parser';
import { EventSourceParserStream } from 'eventsource-parser/stream';
import type { Api } from './api';
import { ApiError } from './api-error';
import type { CompletionRequest, CompletionResponse } from './schemas';

/**
 * The data of one event. The document gives the stream only as text (CompletionEventStream), not its events:
 * `delta` has the text, `completed` the completion response, `error` the error.
 */
type CompletionEvent = { text?: string; error?: { code?: string; message: string } } & CompletionResponse;

export interface StreamOptions {
  request: CompletionRequest;
  on: { delta: (text: string) => void; start?: (operationId: string) => void };
  signal?: AbortSignal;
}

/**
 * A streamed completion: `on.start` with its operation id, `on.delta` with each piece, resolving with the
 * completion response of the `completed` event. When the connection drops before the end, it resumes from the
 * last event received (Last-Event-ID), so no text repeats. Failures before the stream (auth, quota) answer as
 * JSON errors, thrown by the client; a cancelled answer throws code `Cancelled`.
 */
export async function streamCompletion(
  core: Api['core'],
  { request, on, signal }: StreamOptions,
): Promise<CompletionResponse> {
  const first = await core.POST('/completions', {
    body: { ...request, background: true },
    headers: { accept: 'text/event-stream' },
    parseAs: 'stream',
    signal,
  });
  if (!(first.response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    // The route's JSON answer (a completion the service did not stream), read here as the stream was asked for.
    return (await first.response.json()) as CompletionResponse;
  }
  const operationId = first.response.headers.get('x-operation-id') ?? '';
  on.start?.(operationId);
  let last = 0;
  let body = first.data;
  for (let attempt = 1; ; attempt++) {
    try {
      if (!body) throw new ApiError(502, 'The answer has no body');
      const events = body.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream());
      for await (const e of events as unknown as AsyncIterable<EventSourceMessage>) {
        const id = Number(e.id ?? '0');
        if (id !== 0 && id <= last) continue;
        last = id || last;
        const data = JSON.parse(e.data) as CompletionEvent;
        if (e.event === 'delta') on.delta(data.text ?? '');
        else if (e.event === 'completed') return data;
        else if (e.event === 'error') {
          throw new ApiError(502, data.error?.message ?? 'The completion failed', [], data.error?.code);
        }
      }
    } catch (e) {
      if (e instanceof ApiError || signal?.aborted) throw e;
    }
    // The connection dropped before the end: the service kept the answer going; read on from `last`.
    if (!operationId || attempt > 5) throw new ApiError(502, 'The answer ended before it was complete');
    await new Promise((r) => setTimeout(r, 300 * attempt));
    const replay = await core.GET('/completions/{operationId}/stream', {
      params: { path: { operationId } },
      headers: { 'last-event-id': String(last) },
      parseAs: 'stream',
      signal,
    });
    body = replay.data;
  }
}
