// The running service's package: its folder and version, found by walking up from this module to
// package.json (from the sources, tsc's dist/ or the bundle alike).
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

function find(): { root: string; version: string } {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const file = path.join(dir, 'package.json');
    if (existsSync(file)) {
      const pkg: unknown = JSON.parse(readFileSync(file, 'utf8'));
      const version = typeof pkg === 'object' && pkg !== null && 'version' in pkg ? pkg.version : undefined;
      return { root: dir, version: typeof version === 'string' ? version : '0.0.0' };
    }
    const parent = path.dirname(dir);
    if (parent === dir) return { root: process.cwd(), version: '0.0.0' };
    dir = parent;
  }
}

const found = find();

/** Version string from package.json, read once. */
export const VERSION: string = found.version;

/** The folder holding package.json (and dist/). */
export const PACKAGE_ROOT: string = found.root;
