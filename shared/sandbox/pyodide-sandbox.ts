// The local Python sandbox: Pyodide in worker threads (pyodide-worker.ts), one interpreter per call. The
// first worker makes a memory snapshot of a fresh interpreter (about 4 s); every later one starts from it (a
// few hundred ms), and a few are kept started ahead of calls, so a call does not wait for an interpreter. A
// call's worker is terminated when it ends, at its deadline, or when the caller gives up.
import { MessageChannel, type Worker } from 'node:worker_threads';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { startWorker } from '../workers/start-worker.js';
import { wasm, type WasmModule } from './wasm.js';
import type { SandboxWorkerData, WorkerJob, WorkerMessage } from './pyodide-worker.js';
import { PluginFailed, resultOf, type Sandbox, type SandboxJob, type SandboxLimits, type SandboxResult, type SvcHost } from './sandbox.js';

const PACKAGE_DIR = '/sandbox/package';
const WORK_DIR = '/sandbox/work';

export interface PyodideOptions {
  limits: SandboxLimits;
  /** Interpreters kept started ahead of calls. */
  warm: number;
  /** Calls running at once; more wait for one to end. */
  concurrency: number;
  /** Ready interpreters are let go after this long without a call. */
  idleMs?: number;
}

/** JavaScript heap of a sandbox worker (the interpreter's own memory is WebAssembly memory, bounded apart). */
const WORKER_HEAP_MB = 128;

export class PyodideSandbox implements Sandbox {
  private snapshot: Promise<SharedArrayBuffer> | undefined;
  private wasm: Promise<WasmModule> | undefined;
  private readonly ready: Worker[] = [];
  /** Calls waiting for an interpreter, first come first served. */
  private readonly waiting: { give: (worker: Worker) => void; fail: (e: Error) => void }[] = [];
  private starting = 0;
  private running = 0;
  private wanted = false;
  private idleTimer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly options: PyodideOptions) {}

  warm(): void {
    this.wanted = true;
    this.fill();
  }

  async run(job: SandboxJob): Promise<SandboxResult> {
    this.warm();
    const worker = await this.take(job.signal);
    this.running++;
    try {
      return await this.call(worker, job);
    } finally {
      this.running--;
      void worker.terminate();
      this.fill();
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.idleTimer);
    await Promise.all(this.ready.splice(0).map((w) => w.terminate()));
  }

  private spawn(start?: { snapshot: SharedArrayBuffer; wasm: WasmModule }): Worker {
    const { memoryBytes, scratchBytes, outputBytes } = this.options.limits;
    const data: SandboxWorkerData = { ...start, memoryBytes, scratchBytes, outputBytes };
    return startWorker(import.meta.url, 'pyodide-worker', data, { maxOldGenerationSizeMb: WORKER_HEAP_MB, maxYoungGenerationSizeMb: 16 }, {});
  }

  private compiled(): Promise<WasmModule> {
    this.wasm ??= readFile(path.join(path.dirname(createRequire(import.meta.url).resolve('pyodide/pyodide.mjs')), 'pyodide.asm.wasm')).then((bytes) => wasm.compile(bytes));
    return this.wasm;
  }

  /** A fresh interpreter's memory, made once by a worker of its own. */
  private snapshotOnce(): Promise<SharedArrayBuffer> {
    this.snapshot ??= new Promise<SharedArrayBuffer>((resolve, reject) => {
      const worker = this.spawn();
      worker.once('message', (m: WorkerMessage) => {
        void worker.terminate();
        if (m.type !== 'ready' || !m.snapshot) return reject(new Error('the sandbox did not start'));
        const shared = new SharedArrayBuffer(m.snapshot.byteLength);
        new Uint8Array(shared).set(new Uint8Array(m.snapshot));
        resolve(shared);
      });
      worker.once('error', reject);
    }).catch((e: unknown) => {
      this.snapshot = undefined;
      throw e;
    });
    return this.snapshot;
  }

  /** Starts interpreters until the warm ones and those starting cover the calls waiting plus the warm count. */
  private fill(): void {
    if (this.closed || !this.wanted) return;
    this.touch();
    const target = Math.min(this.options.warm + this.waiting.length, this.options.warm + this.options.concurrency - this.running);
    while (this.ready.length + this.starting < target) {
      this.starting++;
      Promise.all([this.snapshotOnce(), this.compiled()])
        .then(([snapshot, wasm]) => this.prepare({ snapshot, wasm }))
        .then(
          (worker) => {
            this.starting--;
            const next = this.waiting.shift();
            if (next) next.give(worker);
            else if (this.closed) void worker.terminate();
            else this.ready.push(worker);
          },
          (e: unknown) => {
            this.starting--;
            // A call waiting for it fails now, saying why; the next call tries again (not a loop here).
            this.waiting.shift()?.fail(new PluginFailed(`the sandbox could not start an interpreter: ${e instanceof Error ? e.message : String(e)}`));
          },
        );
    }
  }

  private prepare(start: { snapshot: SharedArrayBuffer; wasm: WasmModule }): Promise<Worker> {
    return new Promise((resolve, reject) => {
      const worker = this.spawn(start);
      worker.once('message', (m: WorkerMessage) => (m.type === 'ready' ? resolve(worker) : reject(new Error('the sandbox did not start'))));
      worker.once('error', reject);
      worker.once('exit', () => reject(new Error('the sandbox did not start')));
    });
  }

  private take(signal: AbortSignal | undefined): Promise<Worker> {
    const worker = this.ready.shift();
    if (worker) return Promise.resolve(worker);
    return new Promise((resolve, reject) => {
      const entry = {
        give: (w: Worker) => {
          signal?.removeEventListener('abort', abort);
          resolve(w);
        },
        fail: (e: Error) => {
          signal?.removeEventListener('abort', abort);
          reject(e);
        },
      };
      const abort = () => {
        const at = this.waiting.indexOf(entry);
        if (at >= 0) this.waiting.splice(at, 1);
        reject(signal?.reason instanceof Error ? signal.reason : new Error('aborted'));
      };
      signal?.addEventListener('abort', abort, { once: true });
      this.waiting.push(entry);
      this.fill();
    });
  }

  /** Lets warm interpreters go after a quiet spell, so an idle service holds no sandbox memory. */
  private touch(): void {
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      this.wanted = false;
      for (const w of this.ready.splice(0)) void w.terminate();
    }, this.options.idleMs ?? 10 * 60_000);
    this.idleTimer.unref();
  }

  private call(worker: Worker, job: SandboxJob): Promise<SandboxResult> {
    const { timeoutMs } = this.options.limits;
    const files = [
      ...job.packageFiles.map((f) => ({ path: path.posix.join(PACKAGE_DIR, f.name), bytes: f.bytes })),
      ...job.workFiles.map((f) => ({ path: path.posix.join(WORK_DIR, f.name), bytes: f.bytes })),
    ];
    const task = job.task;
    const spec = 'code' in task ? { code: task.code, work_dir: WORK_DIR } : { entry_point: task.entryPoint, argument: task.argument, svc: Boolean(task.svc), package_dir: PACKAGE_DIR, work_dir: WORK_DIR };
    const bridge = 'code' in task || !task.svc ? undefined : svcBridge(task.svc);
    return new Promise<SandboxResult>((resolve, reject) => {
      const finish = (outcome: () => void) => {
        clearTimeout(timer);
        job.signal?.removeEventListener('abort', onAbort);
        worker.removeAllListeners();
        bridge?.close();
        outcome();
      };
      const fail = (reason: string) => finish(() => reject(new PluginFailed(reason)));
      const timer = setTimeout(() => fail(`the call took longer than ${Math.round(timeoutMs / 1000)} s`), timeoutMs);
      const onAbort = () => finish(() => reject(job.signal?.reason instanceof Error ? job.signal.reason : new Error('aborted')));
      job.signal?.addEventListener('abort', onAbort, { once: true });
      worker.on('message', (m: WorkerMessage) => {
        if (m.type === 'broken') return fail(m.reason);
        if (m.type !== 'done') return;
        finish(() => {
          try {
            resolve(resultOf(m.answer, m.stdout, m.files));
          } catch (e) {
            reject(e instanceof Error ? e : new Error(String(e)));
          }
        });
      });
      worker.on('error', (e: Error & { code?: string }) =>
        fail(e.code === 'ERR_WORKER_OUT_OF_MEMORY' ? `the call needed more than ${WORKER_HEAP_MB} MiB of interpreter heap` : 'the interpreter stopped'),
      );
      worker.on('exit', () => fail('the interpreter stopped'));
      const message: WorkerJob = { job: JSON.stringify(spec), files, ...(bridge ? { svc: bridge.forWorker } : {}) };
      worker.postMessage(message, bridge ? [bridge.forWorker.port] : []);
    });
  }
}

/** The host end of a workflow plugin's `svc` calls: each request is answered on the port, then the flag wakes the worker. */
function svcBridge(host: SvcHost) {
  const { port1, port2 } = new MessageChannel();
  const flag = new SharedArrayBuffer(4);
  const wake = new Int32Array(flag);
  port1.on('message', ({ method, args }: { method: string; args: string }) => {
    void (async () => {
      let answer: string;
      try {
        answer = JSON.stringify({ value: await host(method, JSON.parse(args) as Record<string, unknown>) });
      } catch (e) {
        answer = JSON.stringify({ error: e instanceof Error ? e.message : String(e) });
      }
      port1.postMessage(answer);
      Atomics.store(wake, 0, 1);
      Atomics.notify(wake, 0);
    })();
  });
  return { forWorker: { port: port2, flag }, close: () => port1.close() };
}
