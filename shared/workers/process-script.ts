// The file a child process of the service runs, for processes that may read nothing but their own script (the
// sandbox's, under Node's permission model): one self-contained file. The build puts `<name>.bundle.js`
// beside the module that starts it (in the bundles and in the per-file output alike); from TypeScript sources
// (development, tests) esbuild bundles it once into node_modules/.cache, under a name made from its contents
// (so concurrent test processes share it safely).
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The self-contained script of the process `name` beside the module whose `import.meta.url` is `base`. */
export async function processScript(base: string, name: string): Promise<string> {
  if (!base.endsWith('.ts')) {
    const built = fileURLToPath(new URL(`./${name}.bundle.js`, base));
    if (!existsSync(built)) throw new Error(`${built} is missing: run npm run build`);
    return built;
  }
  const { build } = await import('esbuild');
  const bundled = await build({
    entryPoints: [fileURLToPath(new URL(`./${name}.ts`, base))],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    write: false,
    logLevel: 'silent',
  });
  const text = bundled.outputFiles[0]?.contents;
  if (!text) throw new Error(`esbuild made nothing of ${name}.ts`);
  const cache = path.join(
    path.dirname(path.dirname(createRequire(base).resolve('esbuild/package.json'))),
    '.cache',
    'agent-platform',
  );
  const file = path.join(cache, `${name}-${createHash('sha256').update(text).digest('hex').slice(0, 16)}.mjs`);
  if (!existsSync(file)) {
    mkdirSync(cache, { recursive: true });
    const partial = `${file}.${process.pid}`;
    writeFileSync(partial, text, { mode: 0o644 });
    renameSync(partial, file);
  }
  return file;
}
