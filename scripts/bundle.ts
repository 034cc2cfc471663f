// Bundles `npm start` (scripts/start.ts) into dist/bundle: Node 20 spends most of a start resolving, reading
// and compiling about 680 separate ES modules; a few bundled files load in well under half the time.
// The Azure Functions package keeps tsc's per-file output (dist/functions), which the host loads itself.
import { rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', import.meta.url.endsWith('.ts') ? '' : '..');

export const BUNDLE_DIR = path.join(root, 'dist', 'bundle');

/**
 * Entry points, each a file of its own in the bundle's folder: the server, and the worker threads the
 * embedded store and the extraction pool start by URL relative to the module that starts them.
 */
const ENTRIES = ['scripts/start.ts', 'shared/store/sqlite-reader-worker.ts', 'shared/store/sqlite-checkpoint-worker.ts', 'shared/knowledge/extract-worker.ts', 'shared/sandbox/pyodide-worker.ts'];

/**
 * Left to node_modules: the native SQLite binding; Azurite, which runs as its own process; Pyodide, which
 * loads its WebAssembly and standard library from its own folder; and the telemetry
 * SDKs, which patch modules as Node loads them and share state through their package identity (they load
 * only when telemetry is configured).
 */
const EXTERNAL = ['better-sqlite3', 'azurite', 'pyodide', 'pino-pretty', 'applicationinsights', '@opentelemetry/*', '@azure/monitor-*'];

export async function bundle(outdir = BUNDLE_DIR): Promise<void> {
  rmSync(outdir, { recursive: true, force: true });
  await build({
    absWorkingDir: root,
    entryPoints: ENTRIES,
    outdir,
    entryNames: '[name]',
    // Chunks beside the entries: a chunk that starts a worker resolves `./<worker>.js` from its own URL.
    chunkNames: '[name]-[hash]',
    bundle: true,
    // Modules loaded on first use (the MCP SDK, the Cosmos SDK, document parsers) stay separate chunks.
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    external: EXTERNAL,
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
  bundle().catch((e: unknown) => {
    process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  });
}
