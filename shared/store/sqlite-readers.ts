// A small pool of read-only SQLite connections in worker threads, for aggregate queries: a long analytics
// scan never blocks the event loop, and a report's independent queries run on several cores at once.
import { Worker } from 'node:worker_threads';
import { StoreError } from './types.js';

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
    // From TypeScript sources (development, tests) the worker is loaded through tsx; built code runs plain.
    const source = import.meta.url.endsWith('.ts');
    const url = new URL(`./sqlite-reader-worker.${source ? 'ts' : 'js'}`, import.meta.url);
    // tsx registers itself inside the worker: Node 20 workers do not take --import in execArgv.
    const boot = `import('tsx/esm/api').then((tsx) => { tsx.register(); return import(${JSON.stringify(url.href)}); })`;
    for (let i = 0; i < size; i++) {
      const worker = source ? new Worker(boot, { eval: true, workerData: { file } }) : new Worker(url, { workerData: { file } });
      worker.unref();
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
