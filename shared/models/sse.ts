// Reads a streamed chat completion (server-sent events of `chat.completion.chunk`s, ending with `[DONE]`):
// each piece of text as it arrives, and the whole answer with its usage at the end. The stream is upstream
// input: it is bounded in size, and every chunk is checked before use.
import type { Readable } from 'node:stream';
import { context } from '@opentelemetry/api';
import { createParser } from 'eventsource-parser';
import { invalid, tooLarge } from './upstream-errors.js';
import { usageOf, type ModelAnswer } from './wire.js';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Reads the stream by its events rather than `for await`: the async iterator costs several promises per
 * network chunk, and a service holding thousands of open streams reads hundreds of chunks a second.
 */
export function readSse(body: Readable, limit: number, onDelta: (text: string) => void): Promise<ModelAnswer> {
  let content = '';
  let usage: unknown;
  // Set by the parser's callback while a chunk is fed to it.
  const state: { done: boolean; failure: Error | undefined } = { done: false, failure: undefined };
  const parser = createParser({
    onEvent(event) {
      if (event.data === '[DONE]') {
        state.done = true;
        return;
      }
      let chunk: unknown;
      try {
        chunk = JSON.parse(event.data);
      } catch {
        state.failure ??= invalid('a streamed chunk is not JSON');
        return;
      }
      if (!isObject(chunk)) {
        state.failure ??= invalid('a streamed chunk is not an object');
        return;
      }
      if (isObject(chunk.usage)) usage = chunk.usage;
      const choice: unknown = Array.isArray(chunk.choices) ? chunk.choices[0] : undefined;
      // Chunks without choices (usage, Azure's content-filter notes) carry no text.
      const text = isObject(choice) && isObject(choice.delta) ? choice.delta.content : undefined;
      if (typeof text === 'string' && text.length > 0) {
        content += text;
        onDelta(text);
      }
    },
  });
  const decoder = new TextDecoder('utf-8', { fatal: true });
  let size = 0;
  return new Promise<ModelAnswer>((resolve, reject) => {
    let settled = false;
    const settle = (failure: Error | undefined) => {
      if (settled) return;
      settled = true;
      // The error listener stays: destroying an unfinished body emits one, which is no longer news.
      body.off('data', onData).off('end', onEnd).off('close', onClose);
      if (failure) {
        reject(failure);
        if (!body.destroyed) body.destroy();
        return;
      }
      resolve({ content, ...usageOf(usage) });
      // Past [DONE] the rest (as a rule only the body's end) is read and dropped within the same bound, so the
      // connection goes back to the pool for the next call instead of being closed and opened again.
      body.on('data', (bytes: Buffer) => {
        size += bytes.length;
        if (size > limit) body.destroy();
      });
    };
    const read = (bytes: Buffer) => {
      size += bytes.length;
      if (size > limit) return settle(tooLarge(limit));
      let text: string;
      try {
        text = decoder.decode(bytes, { stream: true });
      } catch {
        return settle(invalid('the stream is not UTF-8'));
      }
      parser.feed(text);
      if (state.failure || state.done) settle(state.failure);
    };
    // In the caller's context: the socket emits in the context of whichever request opened the connection,
    // and the pieces' consumers (logs, spans, a kept stream's timers) must see this call's. Entering it costs
    // a few hundred bytes a chunk, so only when the connection's differs (it was opened by another call).
    const caller = context.active();
    const onData = (bytes: Buffer) =>
      context.active() === caller ? read(bytes) : context.with(caller, read, undefined, bytes);
    const ended = () => invalid('the stream ended before [DONE]');
    const onEnd = () => settle(ended());
    // Destroyed without an error (nothing else ends it then): the stream was cut.
    const onClose = () => settle(ended());
    body.on('data', onData).on('end', onEnd).on('error', settle).on('close', onClose);
  });
}
