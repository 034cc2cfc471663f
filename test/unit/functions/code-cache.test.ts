// The deployed app's loader: a wrapped CommonJS bundle runs with or without its code cache, V8 takes the cache
// it was given when it fits, and a cache that does not fit (another V8, or damaged) only costs the compile.
import { mkdtempSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cacheFileOf, loadWithCodeCache } from '../../../functions/code-cache.js';

// As the build writes app.cjs: the module's text inside Node's CommonJS wrapper.
const BUNDLE = `(function (exports, require, module, __filename, __dirname) {
  const path = require('node:path');
  function greet(name) { return 'hello ' + name + ' from ' + path.basename(__filename); }
  module.exports = { greet };
})`;

describe('loadWithCodeCache', () => {
  let dir: string;
  let file: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'code-cache-'));
    file = path.join(dir, 'app.cjs');
    writeFileSync(file, BUNDLE);
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  type App = { greet(name: string): string };

  it('runs the bundle without a cache, then saves one that the next load takes', () => {
    const first = loadWithCodeCache<App>(pathToFileURL(file));
    expect(first.exports.greet('you')).toBe('hello you from app.cjs');
    expect(first.cache).toBe('none');
    expect(existsSync(cacheFileOf(file))).toBe(false);
    first.saveCache();
    expect(existsSync(cacheFileOf(file))).toBe(true);

    const second = loadWithCodeCache<App>(pathToFileURL(file));
    expect(second.cache).toBe('taken');
    expect(second.exports.greet('again')).toBe('hello again from app.cjs');
  });

  it('compiles as usual when the cache does not fit', () => {
    writeFileSync(cacheFileOf(file), Buffer.from('not a code cache of this V8'));
    const loaded = loadWithCodeCache<App>(pathToFileURL(file));
    expect(loaded.cache).toBe('rejected');
    expect(loaded.exports.greet('still')).toBe('hello still from app.cjs');
  });
});
