// A Python sandbox worker thread: one Pyodide interpreter (CPython in WebAssembly) that serves exactly one
// call and is then terminated, so nothing a call leaves behind reaches another. Its limits hold whatever the
// Python does: WebAssembly memory cannot grow past the bound (Python sees MemoryError), the scratch file
// system takes a bounded number of bytes (ENOSPC), standard output a bounded number (the call fails), and
// the JavaScript bridge is closed: no `js` or `pyodide_js` module, no sockets, no `require`, no code made
// from strings, and the thread's environment is empty. The pool (pyodide-sandbox.ts) enforces the deadline
// by terminating the thread.
import { parentPort, receiveMessageOnPort, workerData, type MessagePort } from 'node:worker_threads';
import { createRequire } from 'node:module';
import path from 'node:path';
import { PYTHON_RUNNER } from './python-runner.js';
import type { SandboxFile } from './sandbox.js';
import { wasm, type WasmMemory, type WasmModule } from './wasm.js';

export interface SandboxWorkerData {
  /** A memory snapshot of a freshly started interpreter; absent for the worker that makes it. */
  snapshot?: SharedArrayBuffer;
  /** The interpreter's WebAssembly, compiled once by the pool: its machine code is shared by every worker. */
  wasm?: WasmModule;
  memoryBytes: number;
  scratchBytes: number;
  outputBytes: number;
}

export interface WorkerJob {
  job: string;
  files: { path: string; bytes: Uint8Array }[];
  /** The `svc` bridge of a workflow plugin: requests go out on the port, the flag wakes this thread. */
  svc?: { port: MessagePort; flag: SharedArrayBuffer };
}

export type WorkerMessage =
  | { type: 'ready'; snapshot?: ArrayBuffer }
  | { type: 'done'; answer: string; stdout: string; files: SandboxFile[] }
  | { type: 'broken'; reason: string };

/** Standard output kept for the caller; the rest is counted only. */
const KEPT_OUTPUT = 64 * 1024;

const data = workerData as SandboxWorkerData;

// Before the interpreter exists: its memory cannot grow past the bound (Emscripten grows it through this
// method only; a refused growth is a failed malloc, which Python raises as MemoryError).
const grow: (this: WasmMemory, pages: number) => number = Reflect.get(wasm.Memory.prototype, 'grow');
Object.defineProperty(wasm.Memory.prototype, 'grow', {
  value: function (this: WasmMemory, pages: number) {
    if (this.buffer.byteLength + pages * 65536 > data.memoryBytes) throw new RangeError('the sandbox memory bound is reached');
    return grow.call(this, pages);
  },
  writable: false,
  configurable: false,
});

// The first instantiation is the interpreter's: it takes the module compiled once for all workers.
const instantiate = wasm.instantiate.bind(wasm);
if (data.wasm) {
  const compiled = data.wasm;
  wasm.instantiate = async (_bytes: unknown, imports?: object) => {
    wasm.instantiate = instantiate;
    return { instance: await instantiate(compiled, imports), module: compiled };
  };
}

const require = createRequire(import.meta.url);
const indexURL = path.dirname(require.resolve('pyodide/pyodide.mjs')) + path.sep;
const { loadPyodide } = (await import('pyodide')) as typeof import('pyodide');

type Pyodide = Awaited<ReturnType<typeof loadPyodide>>;
interface EmscriptenParts {
  FS: {
    write: (stream: { node?: { mode?: number } }, buffer: unknown, offset: number, length: number, ...rest: unknown[]) => number;
    isFile: (mode: number) => boolean;
    mkdirTree: (path: string) => void;
    writeFile: (path: string, bytes: Uint8Array) => void;
    readFile: (path: string) => Uint8Array;
    filesystems: Record<string, unknown>;
    ErrnoError: new (errno: number) => Error;
  };
  SOCKFS?: Record<string, unknown> & { websocket_sock_ops?: Record<string, unknown> };
}

const quiet = () => undefined;
const options = { indexURL, jsglobals: Object.create(null) as object, env: { HOME: '/sandbox/work' }, stdout: quiet, stderr: quiet };

async function start(): Promise<void> {
  if (!data.snapshot) {
    // The first worker of a pool only makes the snapshot every other worker starts from (in a tenth of the time).
    const py = await loadPyodide({ ...options, _makeSnapshot: true });
    // The runner and the modules it imports are in the snapshot: a call does not define or import them.
    py.runPython(PYTHON_RUNNER);
    const snapshot = py.makeMemorySnapshot();
    const copy = snapshot.buffer.slice(snapshot.byteOffset, snapshot.byteOffset + snapshot.byteLength) as ArrayBuffer;
    parentPort?.postMessage({ type: 'ready', snapshot: copy } satisfies WorkerMessage, [copy]);
    return;
  }
  const py = await loadPyodide({ ...options, _loadSnapshot: new Uint8Array(data.snapshot) });
  lockDown(py);
  parentPort?.postMessage({ type: 'ready' } satisfies WorkerMessage);
  parentPort?.once('message', (job: WorkerJob) => parentPort?.postMessage(run(py, job)));
}

/** Drops every module and module attribute that holds a JavaScript value (the API object above all). */
const PURGE_JS = `
import sys
from pyodide.ffi import JsProxy
for _name in [n for n in sys.modules if n in ('js', 'pyodide_js') or n.startswith('pyodide_js.')]:
    del sys.modules[_name]
for _module in list(sys.modules.values()):
    _vars = getattr(_module, '__dict__', None)
    if isinstance(_vars, dict):
        for _key in [k for k, v in _vars.items() if isinstance(v, JsProxy)]:
            del _vars[_key]
del _name, _module, _vars, JsProxy
`;

/** Closes every way from Python to the host that the interpreter would otherwise offer. */
function lockDown(py: Pyodide): void {
  const module = (py as unknown as { _module: EmscriptenParts })._module;
  const refuse = () => {
    throw new module.FS.ErrnoError(2); // EACCES: Python sees PermissionError
  };
  const seal = (target: object | undefined, key: string, value: unknown) => {
    if (target) Object.defineProperty(target, key, { value, writable: false, configurable: false });
  };
  seal(module.SOCKFS, 'createSocket', refuse);
  seal(module.SOCKFS?.websocket_sock_ops, 'connect', refuse);
  seal(module.SOCKFS?.websocket_sock_ops, 'listen', refuse);
  const api = (py as unknown as { _api?: Record<string, unknown> })._api;
  seal(api, 'initializeNodeSockFS', () => Promise.reject(new Error('the sandbox has no network')));
  py.unregisterJsModule('js');
  py.unregisterJsModule('pyodide_js');
  py.runPython(PURGE_JS);
  // Were Python to reach the API object after all, the ways it has to the host's files and network are shut.
  for (const name of ['mountNodeFS', 'mountNativeFS', 'useNodeSockFS', 'loadPackage', 'loadPackagesFromImports']) seal(py, name, () => Promise.reject(new Error('not in the sandbox')));
  module.FS.filesystems.NODEFS = undefined;
  // Emscripten reports a refused write on the console; the caller gets the reason instead.
  for (const name of ['log', 'warn', 'error', 'info', 'debug'] as const) console[name] = () => undefined;
  // Whatever JavaScript value Python could still reach, it cannot make code from strings or find the host.
  const g = globalThis as Record<string, unknown>;
  for (const name of ['require', 'eval', 'fetch', 'WebSocket', 'XMLHttpRequest', 'EventSource']) Reflect.deleteProperty(g, name);
  for (const fn of [function () {}, async function () {}, function* () {}, async function* () {}]) {
    Object.defineProperty(Object.getPrototypeOf(fn), 'constructor', { value: undefined, writable: false, configurable: false });
  }
  const p = process as unknown as Record<string, unknown>;
  for (const name of ['binding', '_linkedBinding', 'dlopen', 'kill', 'abort', 'chdir']) seal(p, name, refuse);
}

function run(py: Pyodide, { job, files, svc }: WorkerJob): WorkerMessage {
  const module = (py as unknown as { _module: EmscriptenParts })._module;
  const fs = module.FS;
  const workDir = (JSON.parse(job) as { work_dir: string }).work_dir;
  for (const f of files) {
    fs.mkdirTree(path.posix.dirname(f.path));
    fs.writeFile(f.path, f.bytes);
  }
  fs.mkdirTree(workDir);
  let broken: string | undefined;
  // Bytes the call writes to files, all told: the scratch directory lives in this thread's memory.
  const write = module.FS.write;
  let written = 0;
  module.FS.write = function (stream: { node?: { mode?: number } }, buffer: unknown, offset: number, length: number, ...rest: unknown[]) {
    if (module.FS.isFile(stream.node?.mode ?? 0)) written += length;
    if (written > data.scratchBytes) {
      broken ??= `the plugin wrote more than ${Math.round(data.scratchBytes / 1048576)} MiB to files`;
      throw new module.FS.ErrnoError(51); // ENOSPC
    }
    return write.call(this, stream, buffer, offset, length, ...rest);
  };
  let printed = 0;
  const kept: Uint8Array[] = [];
  let keptBytes = 0;
  py.setStdout({
    write(buffer: Uint8Array) {
      printed += buffer.length;
      if (printed > data.outputBytes) {
        broken ??= `the plugin printed more than ${Math.round(data.outputBytes / 1048576)} MiB`;
        throw new Error(broken);
      }
      if (keptBytes < KEPT_OUTPUT) {
        kept.push(buffer.slice(0, KEPT_OUTPUT - keptBytes));
        keptBytes += Math.min(buffer.length, KEPT_OUTPUT - keptBytes);
      }
      return buffer.length;
    },
  });
  py.setStderr({ write: (buffer: Uint8Array) => buffer.length });
  if (svc) {
    const flag = new Int32Array(svc.flag);
    py.registerJsModule('_svc_bridge', {
      call(method: string, args: string): string {
        Atomics.store(flag, 0, 0);
        svc.port.postMessage({ method, args });
        Atomics.wait(flag, 0, 0);
        return (receiveMessageOnPort(svc.port)?.message as string | undefined) ?? '{"error": "the service did not answer"}';
      },
    });
  }
  let answer: string;
  try {
    if (svc) py.runPython('from _svc_bridge import call as _svc_call');
    const runner = (py.globals as unknown as { get(name: string): unknown }).get('_sandbox_run') as (job: string) => string;
    answer = runner(job);
  } catch (e) {
    return { type: 'broken', reason: broken ?? `the interpreter stopped: ${e instanceof Error ? e.message.split('\n').filter(Boolean).pop()?.slice(0, 300) : String(e)}` };
  }
  if (broken) return { type: 'broken', reason: broken };
  const parsed = JSON.parse(answer) as { ok: boolean; written?: string[] };
  const out = (parsed.written ?? []).map((name) => ({ name, bytes: fs.readFile(path.posix.join(workDir, name)) }));
  return { type: 'done', answer, stdout: Buffer.concat(kept).toString('utf8'), files: out };
}

await start();
