// Loads a CommonJS bundle with V8's code cache: the functions V8 compiled in a run of the bundle (the app's
// import and its first answer), saved beside it at build time, instead of parsing and compiling them again
// on every cold start. Node 20 has no code cache for ES modules, hence CommonJS.
//
// V8 takes a cache only from its own version with the same flags; otherwise it compiles the source as usual
// (`rejected`), so a package built with another Node still runs, only without the head start.
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';

export interface CachedModule<T> {
  exports: T;
  /** What became of the cache: none was there, V8 took it, or V8 refused it (and compiled as usual). */
  cache: 'none' | 'taken' | 'rejected';
  /** Writes the cache of everything compiled so far beside the bundle (`<bundle>.cache`). */
  saveCache(): void;
}

export const cacheFileOf = (bundle: string): string => `${bundle}.cache`;

function readCache(file: string): Buffer | undefined {
  try {
    return readFileSync(file);
  } catch {
    return undefined;
  }
}

export function loadWithCodeCache<T>(url: URL): CachedModule<T> {
  const filename = fileURLToPath(url);
  const cacheFile = cacheFileOf(filename);
  const cachedData = readCache(cacheFile);
  // The build checks that the bundle is ASCII, so one byte per character reads it without decoding (and Node
  // keeps a text this long outside V8's heap). The bundle is already wrapped as a CommonJS module.
  const source = readFileSync(filename, 'latin1');
  const script = new vm.Script(source, {
    filename,
    ...(cachedData ? { cachedData } : {}),
  });
  const module = { exports: {} as T };
  const init = script.runInThisContext() as (
    exports: T,
    require: NodeJS.Require,
    module: { exports: T },
    filename: string,
    dirname: string,
  ) => void;
  init(module.exports, createRequire(filename), module, filename, path.dirname(filename));
  return {
    exports: module.exports,
    cache: cachedData === undefined ? 'none' : script.cachedDataRejected === true ? 'rejected' : 'taken',
    saveCache: () => writeFileSync(cacheFile, script.createCachedData()),
  };
}
