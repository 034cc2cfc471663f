// An extraction worker thread: reads one document at a time for the pool (extract-pool.ts) and answers its
// text or why it cannot be read; for attachments it also counts the text's tokens and marks them
// (token-marks.ts), so a completion cuts an attachment to its token budget without tokenizing on the request
// thread. The pool terminates it at the deadline, which runs from when the worker says it is ready (its slow
// readers loaded); its heap is limited when started.
import { parentPort } from 'node:worker_threads';
import { EXTRACTOR_READY, ExtractionError } from './extract.js';
import { loadReaders, readFormat } from './extract-formats.js';
import { decode, encodeGenerator } from 'gpt-tokenizer/encoding/cl100k_base';
import { MARK_EVERY, type TokenMarks } from './token-marks.js';

export interface ExtractTask {
  id: number;
  bytes: Uint8Array;
  format: string;
  fallbackTitle: string;
  /** Count the text's tokens too, up to this many characters of it (the rest is dropped). */
  countTokensUpTo?: number;
}

export type ExtractAnswer = { id: number; title: string; text: string; tokens?: TokenMarks } | { id: number; error: string; readable: boolean };

/** The text's token count and marks (cl100k, as the knowledge partitions count). */
function tokenMarks(text: string): TokenMarks {
  const marks: number[] = [];
  let count = 0;
  let offset = 0;
  // Each piece is a whole pre-tokenized segment of the text, so its decoded length is its length in the text.
  for (const piece of encodeGenerator(text)) {
    while (count + piece.length > (marks.length + 1) * MARK_EVERY) marks.push(offset);
    count += piece.length;
    offset += decode(piece).length;
  }
  return { count, marks };
}

/** A reader's message without the worker's file paths (never shown to users). */
const scrub = (message: string) => message.split('\n')[0]?.replace(/(?:file:\/\/)?(?:\/[\w.@+-]+){2,}/g, '<path>').slice(0, 300) ?? 'unknown error';

parentPort?.on('message', (task: ExtractTask) => {
  readFormat(task.bytes, task.format, task.fallbackTitle).then(
    ({ title, text }) => {
      if (task.countTokensUpTo === undefined) return parentPort?.postMessage({ id: task.id, title, text } satisfies ExtractAnswer);
      const kept = text.slice(0, task.countTokensUpTo);
      parentPort?.postMessage({ id: task.id, title, text: kept, tokens: tokenMarks(kept) } satisfies ExtractAnswer);
    },
    (e: unknown) => {
      const readable = e instanceof ExtractionError;
      parentPort?.postMessage({ id: task.id, error: scrub(e instanceof Error ? e.message : String(e)), readable } satisfies ExtractAnswer);
    },
  );
});

// Ready once the readers are loaded (a reader that failed to load fails each document it is given).
if (parentPort)
  void loadReaders()
    .catch(() => undefined)
    .finally(() => parentPort?.postMessage(EXTRACTOR_READY));
