// Reads a streamed chat completion (server-sent events of `chat.completion.chunk`s, ending with `[DONE]`):
// each piece of text as it arrives, and the whole answer with its usage at the end. The stream is upstream
// input: it is bounded in size, and every chunk is checked before use.
import { createParser } from 'eventsource-parser';
import { invalid, tooLarge } from './upstream-errors.js';
import type { ModelAnswer } from './wire.js';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const count = (v: unknown) => (typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : 0);

export async function readSse(body: AsyncIterable<Buffer>, limit: number, onDelta: (text: string) => void): Promise<ModelAnswer> {
  let content = '';
  let usage: { promptTokens: number; completionTokens: number } | undefined;
  // Set by the parser's callback while the loop below feeds it.
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
      if (isObject(chunk.usage)) usage = { promptTokens: count(chunk.usage.prompt_tokens), completionTokens: count(chunk.usage.completion_tokens) };
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
  for await (const bytes of body) {
    size += bytes.length;
    if (size > limit) throw tooLarge(limit);
    let text: string;
    try {
      text = decoder.decode(bytes, { stream: true });
    } catch {
      throw invalid('the stream is not UTF-8');
    }
    parser.feed(text);
    if (state.failure) throw state.failure;
    if (state.done) break;
  }
  if (!state.done) throw invalid('the stream ended before [DONE]');
  return { content, promptTokens: usage?.promptTokens ?? 0, completionTokens: usage?.completionTokens ?? 0 };
}
