// Bundles the two ways the service runs into a few files each: `npm start` (scripts/start.ts) into
// dist/bundle, and the Azure Functions app (functions/index.ts) into dist/azure, which `npm run package`
// ships. Node 20 spends most of a start resolving, reading and compiling about 680 separate ES modules; a few
// bundled files load in a fraction of the time (`npm run bench -- startup`, `npm run bench -- cold-start`).
import { rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', import.meta.url.endsWith('.ts') ? '' : '..');

export const BUNDLE_DIR = path.join(root, 'dist', 'bundle');
export const AZURE_BUNDLE_DIR = path.join(root, 'dist', 'azure');

/** The worker threads the embedded store, the extraction pool and the sandbox start by URL relative to the module that starts them. */
const WORKERS = ['shared/store/sqlite-reader-worker.ts', 'shared/store/sqlite-checkpoint-worker.ts', 'shared/knowledge/extract-worker.ts', 'shared/sandbox/pyodide-worker.ts'];

/**
 * Packages left to node_modules and installed beside a bundle: Pyodide, which loads its WebAssembly and
 * standard library from its own folder, and pino-pretty, which a terminal's log lines load by name.
 */
export const INSTALLED_BESIDE = ['pyodide', 'pino-pretty'];

/** Also left out: the native SQLite binding of the embedded store (optional; Azure runs on Cosmos DB). */
const EXTERNAL = ['better-sqlite3', ...INSTALLED_BESIDE];

/** What each bundle starts from and leaves out besides EXTERNAL. */
const TARGETS = {
  // Azurite runs as its own process, from its own package.
  start: { outdir: BUNDLE_DIR, entry: 'scripts/start.ts', external: ['azurite'] },
  // The Functions worker gives the app `@azure/functions-core` at run time; it is no package.
  azure: { outdir: AZURE_BUNDLE_DIR, entry: 'functions/index.ts', external: ['@azure/functions-core'] },
} as const;

export type BundleTarget = keyof typeof TARGETS;

export async function bundle(target: BundleTarget = 'start', outdir: string = TARGETS[target].outdir): Promise<void> {
  rmSync(outdir, { recursive: true, force: true });
  await build({
    absWorkingDir: root,
    entryPoints: [{ in: TARGETS[target].entry, out: target === 'azure' ? 'index' : 'start' }, ...WORKERS],
    outdir,
    entryNames: '[name]',
    // Chunks beside the entries: a chunk that starts a worker resolves `./<worker>.js` from its own URL.
    chunkNames: '[name]-[hash]',
    bundle: true,
    // Modules loaded on first use (the MCP SDK, the Cosmos SDK, document parsers, exporters) stay separate chunks.
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    external: [...EXTERNAL, ...TARGETS[target].external],
    sourcemap: 'linked',
    // CommonJS dependencies call require(); in an ES module it has to be made.
    banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
    logLevel: 'warning',
    // V8 keeps each loaded module's source text for as long as the process runs: 7.0 MiB of the 25 MiB
    // heap at start as written, 2.4 MiB without comments and spaces. Names stay, so stack traces read.
    minifyWhitespace: true,
    minifySyntax: true,
  });
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  Promise.all([bundle('start'), bundle('azure')]).catch((e: unknown) => {
    process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  });
}
