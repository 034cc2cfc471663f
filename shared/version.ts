// The running service's version: package.json's, found by walking up from this module (src or dist).
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

function find(): { name: string; version: string } {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const file = path.join(dir, 'package.json');
    if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as { name: string; version: string };
    const parent = path.dirname(dir);
    if (parent === dir) return { name: 'agent-platform', version: '0.0.0' };
    dir = parent;
  }
}

/** Version string from package.json, read once. */
export const VERSION: string = find().version;
