// The local Python sandbox: Pyodide in processes of their own (pyodide-process.ts), each inside the
// operating-system boundary of isolation.ts, one process per call. The first process makes a memory snapshot
// of a fresh interpreter (about 2 s); every later one starts from its own copy of it (a few hundred ms), and a
// few are kept started ahead of calls, so a call does not wait for an interpreter. A call's process is killed
// when the call ends, at its deadline, when the caller gives up, or when its memory passes the bound.
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Log } from '../log.js';
import { processScript } from '../workers/process-script.js';
import type { Frame } from './frames.js';
import { confinedNode, findIsolation, IsolationUnavailable, type Isolation } from './isolation.js';
import type { ProcessJob, ProcessStart } from './pyodide-process.js';
import {
  MAX_FILES,
  MAX_OUTPUT_CHARS,
  MAX_RESULT_BYTES,
  PluginFailed,
  isRecord,
  resultOf,
  returnedTooMuch,
  safeName,
  type Sandbox,
  type SandboxFile,
  type SandboxJob,
  type SandboxLimits,
  type SandboxResult,
  type SvcHost,
} from './sandbox.js';
import { ProcessGone, SandboxProcess } from './sandbox-process.js';

const PACKAGE_DIR = '/sandbox/package';
const WORK_DIR = '/sandbox/work';

export interface PyodideOptions {
  limits: SandboxLimits;
  /** Interpreters kept started ahead of calls. */
  warm: number;
  /** Calls running at once; more wait for one to end. */
  concurrency: number;
  /** Run untrusted code even where the process cannot be cut off from the network (default: refuse). */
  allowNetwork?: boolean;
  /** Ready interpreters are let go after this long without a call. */
  idleMs?: number;
  /** Where the boundary the sandbox found is reported, once. */
  log?: Log;
}

/** JavaScript heap of a sandbox process (the interpreter's own memory is WebAssembly memory, bounded apart). */
const HEAP_MB = 128;
/**
 * Memory a process holds beyond the interpreter's: Node, V8's heap and the interpreter's compiled code and
 * snapshot (about 200 MB resident when it is ready, measured). Its data memory limit and the watchdog's
 * bound are the interpreter's memory plus this.
 */
const PROCESS_BYTES = 384 * 1024 * 1024;
/** How often a running call's memory is read. */
const WATCH_MS = 25;
/** A frame's header: its type and, for an answer, the sizes and names of what its body holds (100 names at most). */
const MAX_HEADER = 128 * 1024;
/** `svc` questions one call may ask (each a model call or a search, each answered before the next is read). */
const MAX_SVC_QUESTIONS = 64;
/** Answers sent that a process has not read: past this it is not reading them, and the call fails. */
const MAX_UNREAD = 4 * 1024 * 1024;
/** The snapshot's size bound, for the frame that brings it (about 31 MB measured). */
const MAX_SNAPSHOT = 256 * 1024 * 1024;

export class PyodideSandbox implements Sandbox {
  private setup: Promise<{ isolation: Isolation; script: string; pyodide: string }> | undefined;
  private snapshot: Promise<Uint8Array> | undefined;
  private readonly ready: SandboxProcess[] = [];
  /** Calls waiting for an interpreter, first come first served. */
  private readonly waiting: { give: (ready: SandboxProcess) => void; fail: (e: Error) => void }[] = [];
  private readonly running = new Set<SandboxProcess>();
  private starting = 0;
  private wanted = false;
  private idleTimer: NodeJS.Timeout | undefined;
  private watchdog: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly options: PyodideOptions) {}

  warm(): void {
    this.wanted = true;
    this.fill();
  }

  async run(job: SandboxJob): Promise<SandboxResult> {
    this.warm();
    const child = await this.take(job.signal);
    this.running.add(child);
    this.watch();
    try {
      return await this.call(child, job);
    } finally {
      child.kill();
      this.running.delete(child);
      this.fill();
    }
  }

  close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.idleTimer);
    clearInterval(this.watchdog);
    for (const r of this.ready.splice(0)) r.kill();
    for (const p of this.running) p.kill();
    return Promise.resolve();
  }

  /** Where the processes' code is, and the boundary this machine can make around them: found once. */
  private prepared() {
    this.setup ??= (async () => {
      const pyodide = createRequire(import.meta.url).resolve('pyodide/pyodide.mjs');
      const script = await processScript(import.meta.url, 'pyodide-process');
      const isolation = await findIsolation(readableBy(pyodide, script), this.options.allowNetwork ?? false);
      this.options.log?.info('The Python sandbox runs each call in a process of its own', { layers: isolation.layers });
      if (!isolation.wrapped)
        this.options.log?.warn(
          'The Python sandbox cannot isolate code from the network on this machine: ' +
            'PLUGIN_SANDBOX_ALLOW_NETWORK=true lets it run anyway',
        );
      return { isolation, script, pyodide };
    })();
    return this.setup;
  }

  private spawn(start: ProcessStart, snapshot?: Uint8Array): Promise<SandboxProcess> {
    return this.prepared().then(({ isolation, script }) => {
      const { memoryBytes } = this.options.limits;
      const node = [
        ...confinedNode(readableBy(start.pyodide, script)),
        `--max-old-space-size=${HEAP_MB}`,
        '--max-semi-space-size=16',
        script,
      ];
      const limits = start.make
        ? { maxHeader: 1024, maxBody: MAX_SNAPSHOT }
        : { maxHeader: MAX_HEADER, maxBody: this.options.limits.filesBytes + MAX_RESULT_BYTES + MAX_OUTPUT_CHARS };
      return new SandboxProcess({
        launch: isolation.launch(node, memoryBytes + PROCESS_BYTES),
        wrapped: isolation.wrapped,
        limits,
        start: { header: start, body: snapshot ?? new Uint8Array(0) },
      });
    });
  }

  private startLimits(make: boolean, pyodide: string): ProcessStart {
    const { memoryBytes, scratchBytes, outputBytes, filesBytes } = this.options.limits;
    return { pyodide, memoryBytes, scratchBytes, outputBytes, filesBytes, make };
  }

  /** A fresh interpreter's memory, made once by a process of its own. */
  private snapshotOnce(): Promise<Uint8Array> {
    this.snapshot ??= this.prepared()
      .then(({ pyodide }) => this.spawn(this.startLimits(true, pyodide)))
      .then(async (maker) => {
        try {
          const frame = await maker.next();
          if (frame.header.type !== 'snapshot') throw new Error('the sandbox did not start');
          return frame.body;
        } catch (e) {
          throw e instanceof ProcessGone
            ? new Error(`the sandbox did not start: ${lastLine(maker.errors) || e.message}`)
            : e;
        } finally {
          maker.kill();
        }
      })
      .catch((e: unknown) => {
        // Isolation that cannot be had stays the answer; anything else is tried again by the next call.
        if (!(e instanceof IsolationUnavailable)) this.snapshot = undefined;
        throw e;
      });
    return this.snapshot;
  }

  /** Starts interpreters until the warm ones and those starting cover the calls waiting plus the warm count. */
  private fill(): void {
    if (this.closed || !this.wanted) return;
    this.touch();
    const target = Math.min(
      this.options.warm + this.waiting.length,
      this.options.warm + this.options.concurrency - this.running.size,
    );
    while (this.ready.length + this.starting < target) {
      this.starting++;
      this.prepare().then(
        (ready) => {
          this.starting--;
          const next = this.waiting.shift();
          if (next) next.give(ready);
          else if (this.closed) ready.kill();
          else this.ready.push(ready);
        },
        (e: unknown) => {
          this.starting--;
          // A call waiting for it fails now, saying why; the next call tries again (not a loop here).
          const reason =
            e instanceof IsolationUnavailable
              ? e.message
              : `the sandbox could not start an interpreter: ${e instanceof Error ? e.message : String(e)}`;
          this.waiting.shift()?.fail(new PluginFailed(reason));
        },
      );
    }
  }

  private async prepare(): Promise<SandboxProcess> {
    const [snapshot, { pyodide }] = await Promise.all([this.snapshotOnce(), this.prepared()]);
    const child = await this.spawn(this.startLimits(false, pyodide), snapshot);
    try {
      const frame = await child.next();
      if (frame.header.type !== 'ready') throw new Error('the sandbox did not start');
    } catch (e) {
      child.kill();
      throw e instanceof ProcessGone ? new Error(lastLine(child.errors) || e.message) : e;
    }
    return child;
  }

  private take(signal: AbortSignal | undefined): Promise<SandboxProcess> {
    for (let ready = this.ready.shift(); ready; ready = this.ready.shift())
      if (!ready.ended) return Promise.resolve(ready);
    return new Promise((resolve, reject) => {
      const entry = {
        give: (r: SandboxProcess) => {
          signal?.removeEventListener('abort', abort);
          resolve(r);
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

  /** Lets warm interpreters go after a quiet spell, so an idle service holds no sandbox processes. */
  private touch(): void {
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(
      () => {
        this.wanted = false;
        for (const r of this.ready.splice(0)) r.kill();
      },
      this.options.idleMs ?? 10 * 60_000,
    );
    this.idleTimer.unref();
  }

  /** Kills a running call's process once it holds more memory than its bound, while calls run. */
  private watch(): void {
    if (this.watchdog) return;
    const bound = this.options.limits.memoryBytes + PROCESS_BYTES;
    this.watchdog = setInterval(() => {
      if (this.running.size === 0) {
        clearInterval(this.watchdog);
        this.watchdog = undefined;
        return;
      }
      for (const p of this.running)
        if ((p.residentBytes() ?? 0) > bound) p.kill(memoryReason(this.options.limits.memoryBytes));
    }, WATCH_MS);
    this.watchdog.unref();
  }

  private async call(child: SandboxProcess, job: SandboxJob): Promise<SandboxResult> {
    const { timeoutMs, memoryBytes } = this.options.limits;
    const files = [
      ...job.packageFiles.map((f) => ({ path: path.posix.join(PACKAGE_DIR, f.name), bytes: f.bytes })),
      ...job.workFiles.map((f) => ({ path: path.posix.join(WORK_DIR, f.name), bytes: f.bytes })),
    ];
    const task = job.task;
    const spec =
      'code' in task
        ? { code: task.code, work_dir: WORK_DIR }
        : {
            entry_point: task.entryPoint,
            argument: task.argument,
            svc: Boolean(task.svc),
            package_dir: PACKAGE_DIR,
            work_dir: WORK_DIR,
          };
    const header: ProcessJob = {
      job: JSON.stringify(spec),
      workDir: WORK_DIR,
      files: files.map((f) => ({ path: f.path, size: f.bytes.length })),
      svc: 'entryPoint' in task && Boolean(task.svc),
    };
    const timer = setTimeout(
      () => child.kill(`the call took longer than ${Math.round(timeoutMs / 1000)} s`),
      timeoutMs,
    );
    const onAbort = () => child.kill();
    job.signal?.addEventListener('abort', onAbort, { once: true });
    const svc = 'entryPoint' in task ? task.svc : undefined;
    try {
      child.send(header, Buffer.concat(files.map((f) => f.bytes)));
      for (let questions = 0; ; questions++) {
        const frame = await child.next();
        if (frame.header.type === 'svc') {
          // Only a workflow plugin asks, one question at a time, a bounded number of them.
          if (!svc) throw new PluginFailed('the sandbox asked the service something in a call that may not ask');
          if (questions >= MAX_SVC_QUESTIONS)
            throw new PluginFailed(`the plugin asked svc more than ${MAX_SVC_QUESTIONS} times`);
          child.send({ answer: await svcAnswer(svc, frame) });
          if (child.unread > MAX_UNREAD)
            throw new PluginFailed('the plugin does not read the answers to its svc questions');
          continue;
        }
        if (frame.header.type === 'broken')
          throw new PluginFailed(textOf(frame.header.reason, 'the interpreter stopped').slice(0, 2000));
        if (frame.header.type !== 'done') throw new PluginFailed('the sandbox answered something it should not');
        return answerOf(frame);
      }
    } catch (e) {
      if (job.signal?.aborted) throw job.signal.reason instanceof Error ? job.signal.reason : new Error('aborted');
      if (!(e instanceof ProcessGone)) throw e;
      if (e.stoppedFor) throw new PluginFailed(e.stoppedFor);
      // V8 ends a process out of memory with a message, or, where an allocation fails at the data limit, a signal.
      if (/out of memory|Reached heap limit|allocation failed/i.test(child.errors) || e.signal)
        throw new PluginFailed(memoryReason(memoryBytes, e.signal));
      throw new PluginFailed(
        e.message.startsWith('a message')
          ? `the sandbox answered more than it may: ${e.message}`
          : 'the interpreter stopped',
      );
    } finally {
      clearTimeout(timer);
      job.signal?.removeEventListener('abort', onAbort);
    }
  }
}

/** What a workflow plugin's `svc` call is answered with, as the JSON text the runner reads. */
async function svcAnswer(host: SvcHost, frame: Frame): Promise<string> {
  const { method, args } = frame.header;
  try {
    if (typeof method !== 'string' || typeof args !== 'string')
      throw new Error('the call is not a method and its arguments');
    const parsed: unknown = JSON.parse(args);
    if (!isRecord(parsed)) throw new Error('the arguments are not an object');
    return JSON.stringify({ value: await host(method, parsed) });
  } catch (e) {
    return JSON.stringify({ error: e instanceof Error ? e.message : String(e) });
  }
}

/** What a sandbox process may read: Pyodide's directory and its own script, nothing else. */
const readableBy = (pyodide: string, script: string) => [`${path.dirname(pyodide)}${path.sep}`, script];

const memoryReason = (memoryBytes: number, signal?: string) =>
  `the call needed more than ${Math.round((memoryBytes + PROCESS_BYTES) / 1048576)} MiB of memory` +
  (signal ? ` (its interpreter ended with ${signal})` : '');

const textOf = (value: unknown, otherwise: string) => (typeof value === 'string' ? value : otherwise);

const isSize = (n: unknown): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;

/**
 * The call's result from a process's `done` frame, checked as untrusted input: the body holds the answer, the
 * output and each file in turn, with sizes the header gives; names must be relative names under the working
 * directory, and every part within its bound.
 */
function answerOf(frame: Frame): SandboxResult {
  const { answer, stdout } = frame.header;
  const listed: readonly unknown[] = Array.isArray(frame.header.files) ? frame.header.files : [];
  if (!isSize(answer) || !isSize(stdout) || stdout > MAX_OUTPUT_CHARS)
    throw new PluginFailed('the sandbox answered something it should not');
  if (answer > MAX_RESULT_BYTES) throw returnedTooMuch();
  if (listed.length > MAX_FILES) throw new PluginFailed(`the plugin wrote more than ${MAX_FILES} files`);
  const text = (from: number, size: number) =>
    Buffer.from(frame.body.buffer, frame.body.byteOffset + from, size).toString('utf8');
  if (answer + stdout > frame.body.length) throw new PluginFailed('the sandbox answered something it should not');
  const files: SandboxFile[] = [];
  let at = answer + stdout;
  for (const item of listed) {
    const { name, size } = isRecord(item) ? item : {};
    if (typeof name !== 'string' || !safeName(name) || !isSize(size) || at + size > frame.body.length)
      throw new PluginFailed('the sandbox named a written file it may not');
    files.push({ name, bytes: frame.body.subarray(at, at + size) });
    at += size;
  }
  return resultOf(text(0, answer), text(answer, stdout), files);
}

const lastLine = (text: string) => text.trim().split('\n').filter(Boolean).pop()?.slice(0, 300) ?? '';
