// The file a child process of the service runs, for processes that may read only their own code (the sandbox
// processes, under Node's permission model): `./<name>.js` beside the module that starts them in the built
// code, or from TypeScript sources (development, tests) that module bundled into one file by esbuild, kept in
// node_modules/.cache under a name made from its contents (so concurrent test processes share it safely).
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The script of the process `name` beside the module whose `import.meta.url` is `base`. */
export async function processScript(base: string, name: string): Promise<string> {
  if (!base.endsWith('.ts')) return fileURLToPath(new URL(`./${name}.js`, base));
  const { build } = await import('esbuild');
  const built = await build({ entryPoints: [fileURLToPath(new URL(`./${name}.ts`, base))], bundle: true, platform: 'node', format: 'esm', target: 'node20', write: false, logLevel: 'silent' });
  const text = built.outputFiles[0]?.contents;
  if (!text) throw new Error(`esbuild made nothing of ${name}.ts`);
  const cache = path.join(path.dirname(path.dirname(createRequire(base).resolve('esbuild/package.json'))), '.cache', 'agent-platform');
  const file = path.join(cache, `${name}-${createHash('sha256').update(text).digest('hex').slice(0, 16)}.mjs`);
  if (!existsSync(file)) {
    mkdirSync(cache, { recursive: true });
    const partial = `${file}.${process.pid}`;
    writeFileSync(partial, text, { mode: 0o644 });
    renameSync(partial, file);
  }
  return file;
}
