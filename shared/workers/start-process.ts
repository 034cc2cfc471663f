// Child processes of the service's own modules, for work on untrusted input that must not cost the service
// its memory (document readers): `./<name>.js` beside the module that starts them (per-file build and
// bundles, as worker threads are found: start-worker.ts), or `.ts` through tsx from sources. Unlike a
// thread, a process has an operating-system bound on its data memory (RLIMIT_DATA counts V8's heap,
// ArrayBuffers and all else it allocates; a thread's heap limit bounds the heap alone), and what it used
// goes back to the system when it ends. Spoken to over Node's IPC channel with the advanced serialization,
// so bytes pass as they are.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Socket } from 'node:net';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The exit code of a process whose memory bound could not be set (it never ran). */
export const LIMIT_NOT_SET = 96;

const PAGE_BYTES = 4096;

export interface ProcessOptions {
  /** Data memory the process may map (RLIMIT_DATA), bytes. */
  dataBytes: number;
  /** Node's own flags (such as --max-old-space-size). */
  nodeArgs?: readonly string[];
}

/**
 * Starts the process `name` beside the module whose `import.meta.url` is `base`, with the IPC channel as its
 * only way out (standard output is dropped; standard error is piped for its last words), and an empty
 * environment: nothing of the service's settings or secrets. It does not hold the service open.
 */
export function startProcess(base: string, name: string, options: ProcessOptions): ChildProcess {
  const source = base.endsWith('.ts');
  const script = fileURLToPath(new URL(`./${name}.${source ? 'ts' : 'js'}`, base));
  // From sources tsx loads the script; found from here, so the process needs no working directory of ours.
  const tsx = source ? ['--import', pathToFileURL(createRequire(base).resolve('tsx')).href] : [];
  const node = [...(options.nodeArgs ?? []), ...tsx, script];
  // The shell sets the bound (no core dump of a document either), then becomes Node: the pid is Node's.
  const limits = `ulimit -c 0 && ulimit -d ${Math.ceil(options.dataBytes / 1024)}`;
  const bound = `${limits} || exit ${LIMIT_NOT_SET}; exec "$0" "$@"`;
  const [command, args] =
    process.platform === 'win32' ? [process.execPath, node] : ['/bin/sh', ['-c', bound, process.execPath, ...node]];
  const child = spawn(command, args, {
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    serialization: 'advanced',
    env: {},
  });
  child.unref();
  child.channel?.unref();
  if (child.stderr instanceof Socket) child.stderr.unref();
  return child;
}

/** Bytes of memory the process `pid` holds resident now, or undefined where /proc does not say (or it is gone). */
export function residentBytes(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const pages = Number(readFileSync(`/proc/${pid}/statm`, 'ascii').split(' ')[1]);
    return Number.isFinite(pages) ? pages * PAGE_BYTES : undefined;
  } catch {
    return undefined;
  }
}
