// One sandbox process as the service sees it: started inside its boundary (isolation.ts) in a process group
// of its own, spoken to in frames (frames.ts), watched for the memory it holds (its resident set, read from
// /proc), and killed with everything in its group. Everything it writes is untrusted input: frames are
// bounded before they are kept, and what it prints on standard error is kept only as a short tail.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { FrameReader, encodeFrame, type Frame } from './frames.js';
import type { Launch } from './isolation.js';

const PAGE_BYTES = 4096;
/** Standard error kept to tell why a process died (a V8 out-of-memory message, for one). */
const STDERR_TAIL = 4096;

/**
 * Why a process can no longer answer: it exited, broke the frame rules, or was killed (`stoppedFor` says why, for the
 * caller).
 */
export class ProcessGone extends Error {
  constructor(
    message: string,
    readonly stoppedFor?: string,
    /** The signal the process died of, when it was not killed by the service. */
    readonly signal?: string,
  ) {
    super(message);
  }
}

/** How a sandbox process is started: its command, its frame bounds and the first frame it reads. */
export interface ProcessLaunch {
  launch: Launch;
  /** Whether the Node process is the launcher's child (the launcher wraps it in its boundary). */
  wrapped: boolean;
  /** Bounds of the frames the process may write. */
  limits: { maxHeader: number; maxBody: number };
  start: { header: object; body: Uint8Array };
}

export class SandboxProcess {
  private readonly child: ChildProcess;
  private readonly frames: Frame[] = [];
  private waiter: { resolve: (f: Frame) => void; reject: (e: Error) => void } | undefined;
  private gone: ProcessGone | undefined;
  private stderr = '';
  private nodePid: number | undefined;

  private readonly wrapped: boolean;

  /** Starts `launch`, whose Node process is the launcher's child when `wrapped`, and sends it its start frame. */
  constructor({ launch, wrapped, limits, start }: ProcessLaunch) {
    this.wrapped = wrapped;
    this.child = spawn(launch.command, launch.args, { stdio: ['pipe', 'pipe', 'pipe'], env: {}, detached: true });
    this.child.unref();
    const reader = new FrameReader(limits);
    this.child.stdout?.on('data', (chunk: Buffer) => {
      try {
        for (const frame of reader.push(chunk)) this.deliver(frame);
      } catch (e) {
        this.end(e instanceof Error ? e.message : String(e));
      }
      // Nothing more is read while a frame waits to be taken: a process that writes without end fills its own pipe, not
      // the service's memory.
      if (this.frames.length > 0) this.child.stdout?.pause();
    });
    this.child.stderr?.setEncoding('utf8');
    this.child.stderr?.on('data', (text: string) => {
      this.stderr = (this.stderr + text).slice(-STDERR_TAIL);
    });
    // A process that dies while the service writes to it: its pipe errors, and the exit says why.
    this.child.stdin?.on('error', () => undefined);
    this.child.once('error', (e) => this.end(`the sandbox process could not start: ${e.message}`));
    this.child.once('exit', (code, signal) =>
      this.end(`the sandbox process ended (${signal ?? `exit ${String(code)}`})`, undefined, signal ?? undefined),
    );
    this.send(start.header, start.body);
  }

  /** The next frame the process writes; rejects with ProcessGone once it cannot write one. */
  next(): Promise<Frame> {
    const frame = this.frames.shift();
    if (this.frames.length === 0) this.child.stdout?.resume();
    if (frame) return Promise.resolve(frame);
    if (this.gone) return Promise.reject(this.gone);
    return new Promise((resolve, reject) => (this.waiter = { resolve, reject }));
  }

  send(header: object, body?: Uint8Array): void {
    if (this.gone) return;
    for (const bytes of encodeFrame(header, body)) if (bytes.length > 0) this.child.stdin?.write(bytes);
  }

  /** Bytes sent that the process has not read yet. */
  get unread(): number {
    return this.child.stdin?.writableLength ?? 0;
  }

  /** Kills the process and everything in its group (a process it could start, were it able to), saying why. */
  kill(reason?: string): void {
    if (this.child.pid !== undefined) {
      try {
        process.kill(-this.child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    this.end('the sandbox process was stopped', reason);
  }

  /** Bytes of memory the Node process holds now, or undefined where /proc does not say. */
  residentBytes(): number | undefined {
    const pid = this.interpreterPid();
    if (pid === undefined) return undefined;
    try {
      const pages = Number(readFileSync(`/proc/${pid}/statm`, 'ascii').split(' ')[1]);
      return Number.isFinite(pages) ? pages * PAGE_BYTES : undefined;
    } catch {
      return undefined;
    }
  }

  /** The tail of what the process printed on standard error. */
  get errors(): string {
    return this.stderr;
  }

  get ended(): boolean {
    return this.gone !== undefined;
  }

  private interpreterPid(): number | undefined {
    if (!this.wrapped) return this.child.pid;
    if (this.nodePid === undefined && this.child.pid !== undefined) {
      try {
        const children = readFileSync(`/proc/${this.child.pid}/task/${this.child.pid}/children`, 'ascii').trim();
        this.nodePid = children ? Number(children.split(' ')[0]) : undefined;
      } catch {
        return undefined;
      }
    }
    return this.nodePid;
  }

  private deliver(frame: Frame): void {
    const waiter = this.waiter;
    this.waiter = undefined;
    if (waiter) waiter.resolve(frame);
    else this.frames.push(frame);
  }

  private end(reason: string, stoppedFor?: string, signal?: string): void {
    if (this.gone) return;
    this.gone = new ProcessGone(reason, stoppedFor, signal);
    if (this.child.pid !== undefined && this.child.exitCode === null && this.child.signalCode === null) {
      try {
        process.kill(-this.child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    const waiter = this.waiter;
    this.waiter = undefined;
    waiter?.reject(this.gone);
  }
}
