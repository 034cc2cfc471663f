// A sandbox process: one Pyodide interpreter (CPython in WebAssembly) that serves exactly one call and is
// then killed, started inside the operating-system boundary of isolation.ts with Node's permission model.
// This file is the innermost layer, a lock-down that holds only as long as the JavaScript around Python does:
// no `js` or `pyodide_js` module, the process functions of `os` and `posix` removed, the Emscripten functions
// that reach the host (system, scripts, sockets, workers, downloads) replaced by refusals, and the
// interpreter's memory and scratch files bounded so Python sees MemoryError and ENOSPC. Whatever Python
// does to this JavaScript, the layers outside (the process and its namespaces, the permission model, the
// memory limit and the deadline, enforced by the service) still hold.
//
// It talks to the service over its standard input and output in frames (frames.ts): a start frame (the
// limits, where Pyodide is, and the snapshot of a fresh interpreter, or a request to make one), `ready`, then
// one job, the `svc` questions of a workflow plugin and their answers, and `done` or `broken`.
import fs from 'node:fs';
import { readFrameSync, writeFrameSync, type SyncIo } from './frames.js';
import { hasInternals, importPyodide, type EmscriptenFs, type Interpreter, type Resize } from './pyodide-internals.js';
import { PYTHON_RUNNER } from './python-runner.js';
import { isRecord, MAX_OUTPUT_CHARS as KEPT_OUTPUT } from './sandbox.js';
import { webAssembly, type WasmImports, type WasmMemory } from './wasm.js';

/** The limits and the interpreter a process starts with. */
export interface ProcessStart {
  /** pyodide.mjs, in the directory the process may read. */
  pyodide: string;
  memoryBytes: number;
  scratchBytes: number;
  outputBytes: number;
  /** Bytes of files a call may give back. */
  filesBytes: number;
  /** Make the snapshot (the body is then empty) instead of starting from it. */
  make: boolean;
}

/** A call: the runner's job as JSON and its files, whose bytes follow one another in the frame's body. */
export interface ProcessJob {
  job: string;
  /** The working directory of the call, where the attachments are and the files it writes are looked for. */
  workDir: string;
  files: { path: string; size: number }[];
  svc: boolean;
}

const hasNumbers = (h: Record<string, unknown>, keys: readonly string[]) => keys.every((k) => typeof h[k] === 'number');

/** The start frame's header, as the service writes it. */
const isProcessStart = (h: Record<string, unknown>): h is Record<string, unknown> & ProcessStart =>
  typeof h.pyodide === 'string' &&
  typeof h.make === 'boolean' &&
  hasNumbers(h, ['memoryBytes', 'scratchBytes', 'outputBytes', 'filesBytes']);

/** The job frame's header, as the service writes it. */
const isProcessJob = (h: Record<string, unknown>): h is Record<string, unknown> & ProcessJob =>
  typeof h.job === 'string' &&
  typeof h.workDir === 'string' &&
  typeof h.svc === 'boolean' &&
  Array.isArray(h.files) &&
  h.files.every((f: unknown) => isRecord(f) && typeof f.path === 'string' && typeof f.size === 'number');

/** The runner the snapshot defines (python-runner.ts): a job as JSON in, the answer as JSON out. */
const isRunner = (f: unknown): f is (job: string) => string => typeof f === 'function';

const IN = 0;
const OUT = 1;

// Taken before anything runs: the frames go through these even if Python later replaces what `fs` holds.
const io: SyncIo = { readSync: fs.readSync.bind(fs), writeSync: fs.writeSync.bind(fs) };
const send = (header: object, body?: Uint8Array) => writeFrameSync(io, OUT, { header, body });

/** Emscripten library functions that reach the host: each is replaced before the interpreter is made. */
const REFUSED_IMPORTS = new RegExp(
  '^_?emscripten_(system|run_script|async_run_script|async_load_script|websocket_|async_wget|' +
    'create_worker|call_worker|debugger)',
);

/** The signature Emscripten gives an imported function (`sig`), which dlsym needs to make a callable of it. */
const signatureOf = (f: unknown): unknown => (typeof f === 'function' && 'sig' in f ? f.sig : undefined);

function prepareWasm(start: ProcessStart): void {
  const wasmApi = webAssembly();
  // WebAssembly memory cannot grow past the bound: a refused growth is a failed malloc, MemoryError in Python.
  const grow = wasmApi.Memory.prototype.grow;
  Object.defineProperty(wasmApi.Memory.prototype, 'grow', {
    value: function (this: WasmMemory, pages: number) {
      if (this.buffer.byteLength + pages * 65536 > start.memoryBytes)
        throw new RangeError('the sandbox memory bound is reached');
      return grow.call(this, pages);
    },
    writable: false,
    configurable: false,
  });
  // The first instantiation is the interpreter's. Its imports are also the table `dlsym` (ctypes) resolves
  // names in: a refusal here is one there too. (Later ones, of Pyodide's own shared libraries, resolve through it.)
  const instantiate = wasmApi.instantiate.bind(wasmApi);
  wasmApi.instantiate = (bytes, imports?: WasmImports) => {
    wasmApi.instantiate = instantiate;
    const env = imports?.env ?? {};
    for (const name of Object.keys(env)) {
      if (!REFUSED_IMPORTS.test(name)) continue;
      // Each does nothing and answers as a failed call would (system: -1; the others 0, a null pointer where
      // one is expected), with the same signature.
      env[name] = Object.assign(() => (name.endsWith('system') ? -1 : 0), { sig: signatureOf(env[name]) });
    }
    return instantiate(bytes, imports);
  };
  // Emscripten's NODEFS reads Node's file flags through process.binding, which the permission model refuses.
  Reflect.set(process, 'binding', (name: string) => {
    if (name === 'constants') return { fs: fs.constants };
    throw new Error('process.binding is not available in the sandbox');
  });
}

async function main(): Promise<void> {
  const first = readFrameSync(io, IN);
  if (!first) return;
  const start = first.header;
  if (!isProcessStart(start)) throw new Error('the start frame is not a start');
  prepareWasm(start);
  const { loadPyodide } = await importPyodide(start.pyodide);
  const quiet = () => undefined;
  const options = {
    indexURL: start.pyodide.slice(0, start.pyodide.lastIndexOf('/') + 1),
    jsglobals: { __proto__: null },
    env: { HOME: '/sandbox/work' },
    stdout: quiet,
    stderr: quiet,
  };
  if (start.make) {
    const py = await loadPyodide({ ...options, _makeSnapshot: true });
    // The runner and the modules it imports are in the snapshot: a call does not define or import them.
    py.runPython(PYTHON_RUNNER);
    send({ type: 'snapshot' }, py.makeMemorySnapshot());
    return;
  }
  const py = await loadPyodide({ ...options, _loadSnapshot: first.body });
  if (!hasInternals(py)) throw new Error('this Pyodide is not the one the sandbox was written for');
  lockDown(py);
  send({ type: 'ready' });
  const job = readFrameSync(io, IN);
  if (!job) return;
  if (!isProcessJob(job.header)) throw new Error('the job frame is not a job');
  const message = run({ py, start, job: job.header, body: job.body });
  send(message.header, message.body);
}

/** Drops every module and module attribute that holds a JavaScript value, and the process functions. */
const PURGE = `
import sys, os, posix
from pyodide.ffi import JsProxy
for _name in [n for n in sys.modules if n in ('js', 'pyodide_js') or n.startswith('pyodide_js.')]:
    del sys.modules[_name]
for _module in list(sys.modules.values()):
    _vars = getattr(_module, '__dict__', None)
    if isinstance(_vars, dict):
        for _key in [k for k, v in _vars.items() if isinstance(v, JsProxy)]:
            del _vars[_key]
for _name in [n for n in dir(posix) if n in ('system', 'popen', 'fork', 'forkpty', 'kill', 'killpg', 'wait',
        'waitpid', 'wait3', 'wait4', 'waitid', 'posix_spawn', 'posix_spawnp', 'register_at_fork')
        or n.startswith(('exec', 'spawn'))]:
    for _module in (os, posix):
        _module.__dict__.pop(_name, None)
for _name in [n for n in dir(os) if n.startswith(('exec', 'spawn', 'popen'))]:
    os.__dict__.pop(_name, None)
del _name, _module, _vars, JsProxy
`;

/** Closes the ways from Python to the host that the interpreter would otherwise offer. */
function lockDown(py: Interpreter): void {
  const module = py._module;
  const refuse = () => {
    throw new module.FS.ErrnoError(2); // EACCES: Python sees PermissionError
  };
  const seal = (target: object | undefined, key: string, value: unknown) => {
    if (target) Object.defineProperty(target, key, { value, writable: false, configurable: false });
  };
  seal(module.SOCKFS, 'createSocket', refuse);
  seal(module.SOCKFS?.websocket_sock_ops, 'connect', refuse);
  seal(module.SOCKFS?.websocket_sock_ops, 'listen', refuse);
  seal(py._api, 'initializeNodeSockFS', () => Promise.reject(new Error('the sandbox has no network')));
  py.unregisterJsModule('js');
  py.unregisterJsModule('pyodide_js');
  py.runPython(PURGE);
  for (const name of ['mountNodeFS', 'mountNativeFS', 'useNodeSockFS', 'loadPackage', 'loadPackagesFromImports'])
    seal(py, name, () => Promise.reject(new Error('not in the sandbox')));
  module.FS.filesystems.NODEFS = undefined;
  // The host file system driver stays reachable through the module object: its mount refuses.
  seal(module.NODEFS, 'mount', refuse);
  // Standard input's default reader holds Node's stdin stream (a net.Socket): the call has no input instead.
  py.setStdin({ error: true });
  // Emscripten reports a refused write on the console; the caller gets the reason instead.
  for (const name of ['log', 'warn', 'error', 'info', 'debug'] as const) console[name] = () => undefined;
  for (const name of ['require', 'fetch', 'WebSocket', 'XMLHttpRequest', 'EventSource'])
    Reflect.deleteProperty(globalThis, name);
  for (const name of ['binding', '_linkedBinding', 'dlopen', 'getBuiltinModule', 'kill', 'abort', 'chdir'])
    seal(process, name, refuse);
}

/** A call to run: the interpreter, its limits, the job and the bytes of the job's files. */
interface Call {
  py: Interpreter;
  start: ProcessStart;
  job: ProcessJob;
  body: Uint8Array;
}

function run({ py, start, job, body }: Call): { header: Record<string, unknown>; body?: Uint8Array } {
  const fsApi = py._module.FS;
  let at = 0;
  for (const f of job.files) {
    fsApi.mkdirTree(f.path.slice(0, f.path.lastIndexOf('/')) || '/');
    fsApi.writeFile(f.path, body.subarray(at, at + f.size));
    at += f.size;
  }
  fsApi.mkdirTree(job.workDir);
  let broken: string | undefined;
  boundScratch(fsApi, start.scratchBytes, (reason) => (broken ??= reason));
  let printed = 0;
  const kept: Uint8Array[] = [];
  let keptBytes = 0;
  py.setStdout({
    write(buffer: Uint8Array) {
      printed += buffer.length;
      if (printed > start.outputBytes) {
        broken ??= `the plugin printed more than ${Math.round(start.outputBytes / 1048576)} MiB`;
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
  if (job.svc) {
    py.registerJsModule('_svc_bridge', {
      call(method: string, args: string): string {
        send({ type: 'svc', method, args });
        const answer = readFrameSync(io, IN);
        return typeof answer?.header.answer === 'string'
          ? answer.header.answer
          : '{"error": "the service did not answer"}';
      },
    });
  }
  // Files there before the call are dated 0: a file dated otherwise after it was written by the call.
  for (const name of listFiles(fsApi, job.workDir).keys()) fsApi.utime(`${job.workDir}/${name}`, 0, 0);
  let answer: string;
  try {
    if (job.svc) py.runPython('from _svc_bridge import call as _svc_call');
    const runner = py.globals.get('_sandbox_run');
    if (!isRunner(runner)) throw new Error('the interpreter has no runner');
    answer = runner(job.job);
  } catch (e) {
    return {
      header: {
        type: 'broken',
        reason:
          broken ??
          `the interpreter stopped: ` +
            `${e instanceof Error ? e.message.split('\n').filter(Boolean).pop()?.slice(0, 300) : String(e)}`,
      },
    };
  }
  if (broken) return { header: { type: 'broken', reason: broken } };
  // The files written are found here, from the file system, not from what the Python side says it wrote.
  const found = listFiles(fsApi, job.workDir);
  const written = [...found].filter(([, stat]) => stat.mtime.getTime() !== 0).map(([name]) => name);
  const total = written.reduce((sum, name) => sum + (found.get(name)?.size ?? 0), 0);
  if (total > start.filesBytes)
    return {
      header: {
        type: 'broken',
        reason:
          `the plugin wrote ${Math.ceil(total / 1048576)} MiB of files; at most ` +
          `${Math.round(start.filesBytes / 1048576)} MiB are kept`,
      },
    };
  const files = written.map((name) => fsApi.readFile(`${job.workDir}/${name}`));
  const answerBytes = Buffer.from(answer, 'utf8');
  const stdout = Buffer.concat(kept);
  // The answer, the output and the files travel as the body: the header stays small, whatever they hold.
  return {
    header: {
      type: 'done',
      answer: answerBytes.length,
      stdout: stdout.length,
      files: written.map((name, i) => ({ name, size: files[i]?.length ?? 0 })),
    },
    body: Buffer.concat([answerBytes, stdout, ...files]),
  };
}

/**
 * Bounds what files may hold, all told: every growth of a file's storage in the interpreter's memory file
 * system is counted (a write, a write past the end of a sparse file, a truncate that lengthens), so bytes
 * that were never written count too.
 */
function boundScratch(fsApi: EmscriptenFs, limit: number, onBreak: (reason: string) => void): void {
  const memfs = fsApi.filesystems.MEMFS;
  if (!memfs) throw new Error('the interpreter has no memory file system');
  let used = 0;
  const counted = (original: Resize): Resize =>
    function (this: unknown, node, size) {
      const before = node.contents?.length ?? 0;
      if (size > before && used + (size - before) > limit) {
        onBreak(`the plugin wrote more than ${Math.round(limit / 1048576)} MiB to files`);
        throw new fsApi.ErrnoError(51); // ENOSPC
      }
      original.call(this, node, size);
      used += Math.max(0, (node.contents?.length ?? 0) - before);
    };
  memfs.expandFileStorage = counted(memfs.expandFileStorage);
  memfs.resizeFileStorage = counted(memfs.resizeFileStorage);
}

/** Regular files under `root` (not following links), by relative name. */
function listFiles(fsApi: EmscriptenFs, root: string): Map<string, { size: number; mtime: Date }> {
  const found = new Map<string, { size: number; mtime: Date }>();
  const walk = (dir: string, prefix: string) => {
    for (const name of fsApi.readdir(dir)) {
      if (name === '.' || name === '..') continue;
      const full = `${dir}/${name}`;
      const stat = fsApi.lstat(full);
      if (fsApi.isDir(stat.mode)) walk(full, `${prefix}${name}/`);
      else if (fsApi.isFile(stat.mode)) found.set(`${prefix}${name}`, stat);
    }
  };
  walk(root, '');
  return found;
}

// Said in a line on standard error (Node's own report of an uncaught error would quote a line of Pyodide's minified
// code).
await main().then(
  () => process.exit(0),
  (e: unknown) => {
    io.writeSync(2, Buffer.from(`${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}\n`));
    process.exit(1);
  },
);
