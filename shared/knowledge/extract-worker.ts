// An extraction worker thread: reads one document at a time for the pool (extract-pool.ts) and answers its
// text or why it cannot be read; for attachments it also counts the text's tokens (token-marks.ts), so a
// completion cuts an attachment to its token budget without tokenizing on the request thread. The pool
// terminates it at the deadline, which runs from when the worker says it is ready (its slow readers loaded);
// its heap is limited when started.
import { parentPort } from 'node:worker_threads';
import { EXTRACTOR_READY, ExtractionError } from './extract.js';
import { loadReaders, readFormat } from './extract-formats.js';
import { tokenMarks, type TokenMarks } from './token-marks.js';

export interface ExtractTask {
  id: number;
  bytes: Uint8Array;
  format: string;
  fallbackTitle: string;
  /** Count the text's tokens too, up to this many characters of it (the rest is dropped). */
  countTokensUpTo?: number;
}

export type ExtractAnswer = { id: number; title: string; text: string; tokens?: TokenMarks } | { id: number; error: string; readable: boolean };

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
