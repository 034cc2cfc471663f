// An extraction process: reads one document at a time for the pool (extract-pool.ts), over Node's IPC
// channel, and answers its text or why it cannot be read; for attachments it also counts the text's tokens
// and marks them (token-marks.ts), so a completion cuts an attachment to its token budget without tokenizing
// on the request thread. The pool starts it with a bound on its data memory and its heap
// (workers/start-process.ts), kills it at the deadline, which runs from when it says it is ready (its slow
// readers loaded), and whenever it holds more memory than its bound. A document that brings it to its memory
// bound fails as that bound even where the reader recovered and went on (last-resort-collections.ts).
import { decode, encodeGenerator } from 'gpt-tokenizer/encoding/cl100k_base';
import { LastResortCollections } from '../workers/last-resort-collections.js';
import { EXTRACTOR_READY, ExtractionError } from './extract.js';
import { loadReaders, readFormat } from './extract-formats.js';
import { MARK_EVERY, type TokenMarks } from './token-marks.js';

export interface ExtractTask {
  id: number;
  bytes: Uint8Array;
  format: string;
  fallbackTitle: string;
  /** Count the text's tokens too, up to this many characters of it (the rest is dropped). */
  countTokensUpTo?: number;
}

export type ExtractAnswer =
  | { id: number; title: string; text: string; tokens?: TokenMarks }
  | { id: number; error: string; readable: boolean }
  /** The document brought the process to its memory bound. */
  | { id: number; outOfMemory: true };

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

/** A reader's message without the process's file paths (never shown to users). */
const scrub = (message: string) =>
  message
    .split('\n')[0]
    ?.replace(/(?:file:\/\/)?(?:\/[\w.@+-]+){2,}/g, '<path>')
    .slice(0, 300) ?? 'unknown error';

const collections = new LastResortCollections();

async function answer(task: ExtractTask): Promise<ExtractAnswer> {
  const before = await collections.count();
  let answered: ExtractAnswer;
  try {
    const { title, text } = await readFormat(task.bytes, task.format, task.fallbackTitle);
    const kept = task.countTokensUpTo === undefined ? undefined : text.slice(0, task.countTokensUpTo);
    answered =
      kept === undefined ? { id: task.id, title, text } : { id: task.id, title, text: kept, tokens: tokenMarks(kept) };
  } catch (e) {
    answered = {
      id: task.id,
      error: scrub(e instanceof Error ? e.message : String(e)),
      readable: e instanceof ExtractionError,
    };
  }
  return (await collections.count()) > before ? { id: task.id, outOfMemory: true } : answered;
}

process.on('message', (task: ExtractTask) => {
  void answer(task).then((a) => process.send?.(a));
});
// The service let it go, or is gone itself: nothing more will come.
process.on('disconnect', () => process.exit(0));

// Ready once the readers are loaded (a reader that failed to load fails each document it is given).
void loadReaders()
  .catch(() => undefined)
  .finally(() => process.send?.(EXTRACTOR_READY));
