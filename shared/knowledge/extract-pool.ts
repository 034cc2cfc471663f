// Extraction out of the service's process: a small pool of reader processes (extract-worker.ts), each reading
// one document at a time and kept for the next. Each has an operating-system bound on its data memory and a
// heap limit (workers/start-process.ts), a watchdog on its resident memory while it reads, and a deadline
// past which it is killed; one that fails, times out, or still holds much memory after a document is
// replaced. The deadline runs from when the process is ready, so starting a reader never counts against a
// document. A document that breaks a bound fails alone, as an ExtractionError naming the bound: it cannot
// stop the service, nor take its memory (worker threads could do both: a thread's heap limit does not bound
// ArrayBuffers, and the memory a thread used stays with the process that ran it).
import type { ChildProcess } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { readyOn } from '../workers/ready.js';
import { LIMIT_NOT_SET, residentBytes, startProcess } from '../workers/start-process.js';
import { EXTRACTOR_READY, ExtractionError, type Extracted, type ExtractRequest } from './extract.js';
import type { ExtractAnswer, ExtractTask } from './extract-worker.js';
import type { TokenMarks } from './token-marks.js';

export interface PoolOptions {
  /** Reader processes at most (default: the cores, up to 4). */
  size?: number;
  /** Deadline of one document's extraction (EXTRACTION_TIMEOUT_SECONDS). */
  timeoutMs: number;
  /** V8 old-generation heap of each process, MiB (default 512). */
  heapMb?: number;
  /**
   * Memory of each process, MiB: the data it may map (RLIMIT_DATA: its heap, ArrayBuffers and all else it
   * allocates) and the resident size past which the watchdog kills it. Default 1024: a ready process holds
   * about 100 MB, and the largest documents within the readers' caps (64 MiB of Office parts, 2,000 PDF
   * pages, 16 Mi characters of text) need a few hundred MB more; four processes at most hold 4 GiB.
   */
  memoryMb?: number;
  /** A process still holding more than this resident after a document is replaced, MiB (default 256). */
  recycleMb?: number;
}

/** How often a reading process's resident memory is read. */
const WATCH_MS = 25;
/** Standard error kept to tell why a process ended (V8's out-of-memory message, for one). */
const STDERR_TAIL = 4096;

interface Slot {
  child: ChildProcess;
  busy: boolean;
  /** Settles when the process has loaded its readers. */
  ready: Promise<void>;
  stderr: string;
  /** Ends the document being read as the memory bound (the watchdog's). */
  overMemory?: () => void;
}

interface Waiting {
  task: Omit<ExtractTask, 'id'>;
  signal: AbortSignal | undefined;
  resolve: (r: Extracted & { tokens?: TokenMarks }) => void;
  reject: (e: Error) => void;
}

const reasonOf = (signal: AbortSignal | undefined) =>
  signal?.reason instanceof Error ? signal.reason : new Error('aborted');

const isAnswer = (message: unknown): message is ExtractAnswer =>
  typeof message === 'object' && message !== null && 'id' in message && typeof message.id === 'number';

export class ExtractionPool {
  private readonly slots: Slot[] = [];
  private readonly queue: Waiting[] = [];
  private readonly size: number;
  private readonly heapMb: number;
  private readonly memoryMb: number;
  private readonly recycleMb: number;
  private nextId = 1;
  private watchdog: NodeJS.Timeout | undefined;

  constructor(private readonly options: PoolOptions) {
    this.size = options.size ?? Math.min(4, availableParallelism());
    this.heapMb = options.heapMb ?? 512;
    this.memoryMb = options.memoryMb ?? 1024;
    this.recycleMb = options.recycleMb ?? 256;
  }

  /** The document's text, read in a process; rejects with ExtractionError when a bound is broken. */
  extract(bytes: Uint8Array, { format, fallbackTitle, signal }: ExtractRequest): Promise<Extracted> {
    return this.submit({ bytes, format, fallbackTitle }, signal);
  }

  /** The document's text, its first `maxChars` characters, with their tokens counted (attachments). */
  async extractCounted(
    bytes: Uint8Array,
    { format, maxChars, signal }: { format: string; maxChars: number; signal?: AbortSignal | undefined },
  ): Promise<{ text: string; tokens: TokenMarks }> {
    const { text, tokens } = await this.submit({ bytes, format, fallbackTitle: '', countTokensUpTo: maxChars }, signal);
    if (!tokens) throw new ExtractionError('the document was read without its tokens counted');
    return { text, tokens };
  }

  private submit(
    task: Omit<ExtractTask, 'id'>,
    signal: AbortSignal | undefined,
  ): Promise<Extracted & { tokens?: TokenMarks }> {
    return new Promise((resolve, reject) => {
      const waiting: Waiting = { task, signal, resolve, reject };
      // Given up while still queued (its document's deadline): it leaves the queue at once.
      signal?.addEventListener(
        'abort',
        () => {
          const at = this.queue.indexOf(waiting);
          if (at < 0) return;
          this.queue.splice(at, 1);
          reject(reasonOf(signal));
        },
        { once: true },
      );
      this.queue.push(waiting);
      this.pump();
    });
  }

  /** Ends every process (at shutdown). */
  async close(): Promise<void> {
    await Promise.all(this.slots.splice(0).map((s) => this.end(s)));
  }

  private pump(): void {
    for (let waiting = this.queue.shift(); waiting; waiting = this.queue.shift()) {
      let slot = this.slots.find((s) => !s.busy);
      if (!slot && this.slots.length < this.size) {
        slot = this.start();
        this.slots.push(slot);
      }
      if (!slot) {
        this.queue.unshift(waiting);
        return;
      }
      if (waiting.signal?.aborted) waiting.reject(reasonOf(waiting.signal));
      else this.run(slot, waiting);
    }
  }

  private start(): Slot {
    const child = startProcess(import.meta.url, 'extract-worker', {
      dataBytes: this.memoryMb * 1024 * 1024,
      nodeArgs: [`--max-old-space-size=${this.heapMb}`],
    });
    const slot: Slot = { child, busy: false, ready: readyOn(child, EXTRACTOR_READY), stderr: '' };
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (text: string) => (slot.stderr = (slot.stderr + text).slice(-STDERR_TAIL)));
    // Its failures are the document's (a close, below); an idle one that ends is replaced on the next.
    child.on('error', () => undefined);
    child.once('close', () => this.forget(slot));
    return slot;
  }

  private run(slot: Slot, { task, signal, resolve, reject }: Waiting): void {
    slot.busy = true;
    const id = this.nextId++;
    const { child } = slot;
    // A document being read holds the service open, as any pending request does; an idle pool does not.
    child.ref();
    child.channel?.ref();
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    const settle = (outcome: () => void, replace: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      child.off('message', onMessage);
      child.off('close', onClose);
      child.off('error', onError);
      slot.overMemory = undefined;
      child.unref();
      child.channel?.unref();
      // What a document left behind goes back to the system with its process.
      if (replace || (residentBytes(child.pid) ?? 0) > this.recycleMb * 1024 * 1024) void this.end(slot);
      else slot.busy = false;
      outcome();
      this.pump();
    };
    const fail = (message: string, replace: boolean) => settle(() => reject(new ExtractionError(message)), replace);
    const onMessage = (answer: unknown) => {
      if (!isAnswer(answer) || answer.id !== id) return;
      if ('outOfMemory' in answer) fail(this.memoryMessage(this.memoryMb), true);
      else if ('error' in answer)
        fail(
          answer.readable
            ? answer.error
            : `the ${task.format.slice(1).toUpperCase()} document cannot be read: ${answer.error}`,
          false,
        );
      else
        settle(
          () =>
            resolve({ title: answer.title, text: answer.text, ...(answer.tokens ? { tokens: answer.tokens } : {}) }),
          false,
        );
    };
    const onClose = (code: number | null, exitSignal: NodeJS.Signals | null) =>
      fail(this.whyEnded(slot, code, exitSignal), true);
    const onError = () => fail('the document reader could not start', true);
    const onAbort = () => settle(() => reject(reasonOf(signal)), true);
    slot.overMemory = () => fail(this.memoryMessage(this.memoryMb), true);
    void slot.ready.then(() => {
      const seconds = Math.round(this.options.timeoutMs / 1000);
      if (!settled)
        timer = setTimeout(
          () => fail(`reading the document took longer than ${seconds} s`, true),
          this.options.timeoutMs,
        );
    });
    child.on('message', onMessage);
    child.once('close', onClose);
    child.once('error', onError);
    signal?.addEventListener('abort', onAbort, { once: true });
    this.watch();
    // The bytes are copied (serialized), never moved: the caller may still hash or keep them.
    child.send(
      { id, ...task } satisfies ExtractTask,
      (e) => e && fail('the document reader stopped before it was given the document', true),
    );
  }

  /** Ends a process the watchdog finds holding more than its bound, while documents are read. */
  private watch(): void {
    if (this.watchdog) return;
    const bound = this.memoryMb * 1024 * 1024;
    this.watchdog = setInterval(() => {
      const reading = this.slots.filter((s) => s.busy);
      if (reading.length === 0) {
        clearInterval(this.watchdog);
        this.watchdog = undefined;
        return;
      }
      for (const slot of reading) if ((residentBytes(slot.child.pid) ?? 0) > bound) slot.overMemory?.();
    }, WATCH_MS);
    this.watchdog.unref();
  }

  /** Why a process ended while it read a document. */
  private whyEnded(slot: Slot, code: number | null, signal: NodeJS.Signals | null): string {
    if (code === LIMIT_NOT_SET) return 'the document reader could not start: its memory bound could not be set';
    if (/Reached heap limit/.test(slot.stderr)) return this.memoryMessage(this.heapMb);
    // V8 ends a process out of memory with a message, or, where an allocation fails at the data bound, with a
    // signal: nothing else sends the reader one while it reads.
    if (/out of memory|allocation failed/i.test(slot.stderr) || signal) return this.memoryMessage(this.memoryMb);
    return 'the document stopped its reader';
  }

  private memoryMessage(mib: number): string {
    return `reading the document needs more than ${mib} MiB of memory`;
  }

  /** Kills a process and resolves once it has ended. */
  private end(slot: Slot): Promise<void> {
    this.forget(slot);
    const { child } = slot;
    if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
    const ended = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGKILL');
    return ended;
  }

  private forget(slot: Slot): void {
    const at = this.slots.indexOf(slot);
    if (at >= 0) this.slots.splice(at, 1);
  }
}
