// Matching off the request thread, in bounded time: a blocklist or an evaluation's checks against a long text
// run in a worker thread (match-worker.ts), one task at a time, with a deadline past which the worker is
// terminated (and started again for the next task) and the task answers that it could not be checked; the
// deadline runs from when the worker has loaded, so starting one never counts against a text. A text
// short enough for its work to stay within a millisecond or so is matched where it is, by the caller.
import type { Worker } from 'node:worker_threads';
import { readyOn } from '../workers/ready.js';
import { startWorker } from '../workers/start-worker.js';
import { MATCHER_READY, type MatchAnswer, type MatchTask } from './match-worker.js';

type Task = MatchTask extends infer T ? (T extends MatchTask ? Omit<T, 'id'> : never) : never;

/** Tasks waiting for the worker at most; past it a task is refused at once (a flood cannot queue without end). */
const MAX_WAITING = 64;

export class MatchTimeout extends Error {}

/**
 * Steps of matching (a text's length times the work per character) done where they are asked for: about a
 * millisecond of the request thread. Past it, the work goes to the worker.
 */
export const INLINE_WORK = 2_000_000;
/** Time one task may take in the worker. */
export const OFF_THREAD_DEADLINE_MS = 250;

export class Matcher {
  private worker: { thread: Worker; ready: Promise<void> } | undefined;
  private readonly waiting: { task: Task; resolve: (r: string | undefined) => void; reject: (e: Error) => void }[] = [];
  private busy = false;
  private nextId = 1;

  constructor(private readonly deadlineMs: number) {}

  /** The task's reason (or undefined) from the worker; rejects with MatchTimeout past the deadline or a full queue. */
  run(task: Task): Promise<string | undefined> {
    if (this.waiting.length >= MAX_WAITING)
      return Promise.reject(new MatchTimeout(`more than ${MAX_WAITING} long texts wait to be matched`));
    return new Promise((resolve, reject) => {
      this.waiting.push({ task, resolve, reject });
      this.next();
    });
  }

  close(): Promise<void> {
    const w = this.worker;
    this.worker = undefined;
    return w ? w.thread.terminate().then(() => undefined) : Promise.resolve();
  }

  private next(): void {
    if (this.busy) return;
    const item = this.waiting.shift();
    if (!item) return;
    this.busy = true;
    const { thread: worker, ready } = (this.worker ??= this.start());
    const id = this.nextId++;
    let timer: NodeJS.Timeout | undefined;
    let settled = false;
    const done = (settle: () => void) => {
      settled = true;
      clearTimeout(timer);
      worker.off('message', onMessage);
      worker.off('error', onError);
      this.busy = false;
      settle();
      this.next();
    };
    const onMessage = (answer: MatchAnswer) => {
      if (answer.id !== id) return;
      done(() => ('error' in answer ? item.reject(new Error(answer.error)) : item.resolve(answer.reason)));
    };
    const onError = (e: Error) => {
      this.worker = undefined;
      done(() => item.reject(e));
    };
    // Past its deadline the worker is stopped mid-match; the next task starts a new one.
    void ready.then(() => {
      if (settled) return;
      timer = setTimeout(() => {
        this.worker = undefined;
        void worker.terminate();
        done(() => item.reject(new MatchTimeout(`the text could not be matched within ${this.deadlineMs} ms`)));
      }, this.deadlineMs);
    });
    worker.on('message', onMessage);
    worker.on('error', onError);
    worker.postMessage({ id, ...item.task });
  }

  private start(): { thread: Worker; ready: Promise<void> } {
    const thread = startWorker(import.meta.url, 'match-worker', { resourceLimits: { maxOldGenerationSizeMb: 256 } });
    // A worker that fails to start answers its task with the error (onError), never with ready.
    return { thread, ready: readyOn(thread, MATCHER_READY) };
  }
}

/** The process's matcher (its worker started on first use). */
export const offThread = new Matcher(OFF_THREAD_DEADLINE_MS);
