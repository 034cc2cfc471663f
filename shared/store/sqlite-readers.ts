// SQLite work off the event loop, in worker threads: a small pool of read-only connections for aggregate
// queries (a long analytics scan never blocks requests, and a report's queries run on several cores at
// once), and the checkpointer.
import type { Worker } from 'node:worker_threads';
import { startWorker as startWorkerBeside } from '../workers/start-worker.js';
import { StoreError } from './types.js';

const startWorker = (name: string, workerData: unknown) => startWorkerBeside(import.meta.url, name, { workerData });

/**
 * Checkpoints the WAL every `intervalMs` on a connection of its own in a worker thread. A checkpoint copies
 * the log into the database file and syncs it: milliseconds to tens of them, which on the request thread
 * stalled every request queued behind it. PASSIVE never waits for the writer, nor the writer for it.
 */
export function startCheckpointer(file: string, intervalMs: number): { stop(): Promise<void> } {
  const worker = startWorker('sqlite-checkpoint-worker', { file, intervalMs });
  // A failed worker only means the log grows until the next start's checkpoint; nothing to crash for.
  worker.on('error', () => undefined);
  return {
    stop: async () => {
      await worker.terminate();
    },
  };
}

interface Pending {
  resolve: (rows: unknown[]) => void;
  reject: (e: Error) => void;
}

export class ReaderPool {
  private readonly workers: Worker[] = [];
  private readonly pending = new Map<number, Pending>();
  private next = 0;
  private id = 0;

  constructor(file: string, size: number) {
    for (let i = 0; i < size; i++) {
      const worker = startWorker('sqlite-reader-worker', { file });
      worker.on('message', (m: { id: number; rows?: unknown[]; error?: string }) => {
        const p = this.pending.get(m.id);
        this.pending.delete(m.id);
        if (m.error !== undefined) p?.reject(new StoreError(m.error));
        else p?.resolve(m.rows ?? []);
      });
      worker.on('error', (e) => {
        for (const p of this.pending.values()) p.reject(e);
        this.pending.clear();
      });
      this.workers.push(worker);
    }
  }

  run(sql: string, params: unknown[]): Promise<unknown[]> {
    const worker = this.workers[this.next++ % this.workers.length];
    if (!worker) return Promise.reject(new StoreError('No reader available'));
    const id = this.id++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      worker.postMessage({ id, sql, params });
    });
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.terminate()));
  }
}
