// The parts of Pyodide that the sandbox process uses beyond its declared API (its Emscripten module, its
// internal API, its globals' getter), typed as far as they are used, with the checks that a loaded module and
// interpreter have them: Pyodide's own types do not declare them, and Pyodide is loaded from a path at run time.
import { pathToFileURL } from 'node:url';

type PyodideModule = typeof import('pyodide');
export type Pyodide = Awaited<ReturnType<PyodideModule['loadPyodide']>>;

/** The storage of a file in Emscripten's memory file system, as its resize functions see it. */
export type Resize = (this: unknown, node: { contents?: { length: number } | null }, size: number) => void;

/** Emscripten's file system, as the sandbox writes a call's files, bounds them and reads them back. */
export interface EmscriptenFs {
  mkdirTree(path: string): void;
  writeFile(path: string, bytes: Uint8Array): void;
  readdir(path: string): string[];
  lstat(path: string): { mode: number; size: number; mtime: Date };
  isFile(mode: number): boolean;
  isDir(mode: number): boolean;
  readFile(path: string): Uint8Array;
  utime(path: string, atime: number, mtime: number): void;
  filesystems: {
    MEMFS?: { expandFileStorage: Resize; resizeFileStorage: Resize };
    NODEFS?: object;
  };
  ErrnoError: new (errno: number) => Error;
}

/** The Emscripten module under the interpreter: its file system and the drivers that reach the host. */
export interface Emscripten {
  FS: EmscriptenFs;
  NODEFS?: object;
  SOCKFS?: { websocket_sock_ops?: object };
}

/** An interpreter with the internals the sandbox uses. */
export type Interpreter = Pyodide & {
  _module: Emscripten;
  _api?: object;
  globals: { get(name: string): unknown };
};

const isObject = (v: unknown): v is object => typeof v === 'object' && v !== null;
/** Pyodide's proxies of Python objects may be functions (a callable's is) or objects. */
const isProxy = (v: unknown): v is object => isObject(v) || typeof v === 'function';

/** Whether `py` has the internals the sandbox uses (a Pyodide other than the one it was written for may not). */
export function hasInternals(py: Pyodide): py is Interpreter {
  const globals: unknown = py.globals;
  return (
    '_module' in py &&
    isObject(py._module) &&
    'FS' in py._module &&
    isObject(py._module.FS) &&
    (!('_api' in py) || py._api === undefined || isObject(py._api)) &&
    isProxy(globals) &&
    'get' in globals &&
    typeof globals.get === 'function'
  );
}

const isPyodideModule = (m: unknown): m is PyodideModule =>
  isObject(m) && 'loadPyodide' in m && typeof m.loadPyodide === 'function';

/** Pyodide's module, imported from its file (pyodide.mjs) where the service found it. */
export async function importPyodide(file: string): Promise<PyodideModule> {
  const loaded: unknown = await import(pathToFileURL(file).href);
  if (!isPyodideModule(loaded)) throw new Error(`${file} is not Pyodide`);
  return loaded;
}
