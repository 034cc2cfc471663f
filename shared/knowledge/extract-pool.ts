// Extraction off the request thread: a small pool of worker threads, each reading one document at a time
// with a heap limit, and a deadline past which its worker is terminated (and replaced on the next task); the
// deadline runs from when the worker is ready, so starting a reader never counts against a document. A
// document that breaks a bound fails alone, as an ExtractionError naming the bound; nothing it does can stop
// the process or other requests.
import type { Worker } from 'node:worker_threads';
import { availableParallelism } from 'node:os';
import { startWorker } from '../workers/start-worker.js';
import { EXTRACTOR_READY, ExtractionError, type Extracted } from './extract.js';
import type { ExtractAnswer, ExtractTask } from './extract-worker.js';
import type { TokenMarks } from './token-marks.js';

export interface PoolOptions {
  /** Worker threads at most (default: the cores, up to 4). */
  size?: number;
  /** Deadline of one document's extraction (EXTRACTION_TIMEOUT_SECONDS). */
  timeoutMs: number;
  /** Old-generation heap of each worker, MiB. */
  heapMb?: number;
}

interface Slot {
  worker: Worker;
  busy: boolean;
  /** Settles when the worker has loaded its readers. */
  ready: Promise<void>;
}

interface Waiting {
  task: Omit<ExtractTask, 'id'>;
  signal: AbortSignal | undefined;
  resolve: (r: Extracted & { tokens?: TokenMarks }) => void;
  reject: (e: Error) => void;
}

export class ExtractionPool {
  private readonly slots: Slot[] = [];
  private readonly queue: Waiting[] = [];
  private readonly size: number;
  private readonly heapMb: number;
  private nextId = 1;

  constructor(private readonly options: PoolOptions) {
    this.size = options.size ?? Math.min(4, availableParallelism());
    this.heapMb = options.heapMb ?? 512;
  }

  /** The document's text, read in a worker; rejects with ExtractionError when a bound is broken. */
  extract(bytes: Uint8Array, format: string, fallbackTitle: string, signal?: AbortSignal): Promise<Extracted> {
    return this.submit({ bytes, format, fallbackTitle }, signal);
  }

  /** The document's text, its first `maxChars` characters, with their tokens counted (attachments). */
  async extractCounted(bytes: Uint8Array, format: string, maxChars: number, signal?: AbortSignal): Promise<{ text: string; tokens: TokenMarks }> {
    const { text, tokens } = await this.submit({ bytes, format, fallbackTitle: '', countTokensUpTo: maxChars }, signal);
    if (!tokens) throw new ExtractionError('the document was read without its tokens counted');
    return { text, tokens };
  }

  private submit(task: Omit<ExtractTask, 'id'>, signal: AbortSignal | undefined): Promise<Extracted & { tokens?: TokenMarks }> {
    return new Promise((resolve, reject) => {
      const waiting: Waiting = { task, signal, resolve, reject };
      // Given up while still queued (its document's deadline): it leaves the queue at once.
      signal?.addEventListener(
        'abort',
        () => {
          const at = this.queue.indexOf(waiting);
          if (at < 0) return;
          this.queue.splice(at, 1);
          reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
        },
        { once: true },
      );
      this.queue.push(waiting);
      this.pump();
    });
  }

  /** Terminates every worker (at shutdown). */
  async close(): Promise<void> {
    await Promise.all(this.slots.splice(0).map((s) => s.worker.terminate()));
  }

  private pump(): void {
    while (this.queue.length > 0) {
      let slot = this.slots.find((s) => !s.busy);
      if (!slot && this.slots.length < this.size) {
        slot = this.start();
        this.slots.push(slot);
      }
      if (!slot) return;
      const waiting = this.queue.shift() as Waiting;
      if (waiting.signal?.aborted) {
        waiting.reject(waiting.signal.reason instanceof Error ? waiting.signal.reason : new Error('aborted'));
        continue;
      }
      this.run(slot, waiting);
    }
  }

  private start(): Slot {
    const worker = startWorker(import.meta.url, 'extract-worker', undefined, { maxOldGenerationSizeMb: this.heapMb, maxYoungGenerationSizeMb: 32 });
    const ready = new Promise<void>((resolve) => {
      const onReady = (message: unknown) => {
        if (message !== EXTRACTOR_READY) return;
        worker.off('message', onReady);
        resolve();
      };
      worker.on('message', onReady);
    });
    return { worker, busy: false, ready };
  }

  private run(slot: Slot, { task, signal, resolve, reject }: Waiting): void {
    slot.busy = true;
    const id = this.nextId++;
    const { worker } = slot;
    const seconds = Math.round(this.options.timeoutMs / 1000);
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    const settle = (outcome: () => void, replace: boolean) => {
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      worker.off('message', onMessage);
      worker.off('error', onError);
      worker.off('exit', onExit);
      if (replace) {
        this.slots.splice(this.slots.indexOf(slot), 1);
        void worker.terminate();
      } else {
        slot.busy = false;
      }
      outcome();
      this.pump();
    };
    const onMessage = (answer: ExtractAnswer) => {
      if (answer.id !== id) return;
      if ('error' in answer) settle(() => reject(new ExtractionError(answer.readable ? answer.error : `the ${task.format.slice(1).toUpperCase()} document cannot be read: ${answer.error}`)), false);
      else settle(() => resolve({ title: answer.title, text: answer.text, ...(answer.tokens ? { tokens: answer.tokens } : {}) }), false);
    };
    const onError = (e: Error & { code?: string }) =>
      settle(() => reject(new ExtractionError(e.code === 'ERR_WORKER_OUT_OF_MEMORY' ? `reading the document needs more than ${this.heapMb} MiB of memory` : 'the document stopped its reader')), true);
    const onExit = () => settle(() => reject(new ExtractionError('the document stopped its reader')), true);
    const onAbort = () => settle(() => reject(signal?.reason instanceof Error ? signal.reason : new Error('aborted')), true);
    void slot.ready.then(() => {
      if (!settled) timer = setTimeout(() => settle(() => reject(new ExtractionError(`reading the document took longer than ${seconds} s`)), true), this.options.timeoutMs);
    });
    worker.on('message', onMessage);
    worker.on('error', onError);
    worker.on('exit', onExit);
    signal?.addEventListener('abort', onAbort, { once: true });
    // The bytes are copied, not transferred: the caller may still hash or keep them.
    worker.postMessage({ id, ...task } satisfies ExtractTask);
  }
}
