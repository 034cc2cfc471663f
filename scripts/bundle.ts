// Bundles the two ways the service runs into a few files each: `npm start` (scripts/start.ts) into
// dist/bundle, and the Azure Functions app into dist/azure, which `npm run package` ships: the app
// (functions/bundled-app.ts) as one CommonJS file with V8's code cache beside it, started by
// functions/bundle-entry.ts. Node 20 spends most of a start resolving, reading and compiling about 680
// separate ES modules; a few bundled files load in a fraction of the time, and with the code cache V8
// compiles almost nothing (`npm run bench -- startup`, `npm run bench -- cold-start`).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build, type Plugin } from 'esbuild';
import { FUNCTION_TABLE, functionTable } from '../functions/group-loaders.js';
import { firstAnswerEnv, firstAnswerScript, functionsCoreStandIn } from './functions-core-stand-in.js';

const root = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '..',
  import.meta.url.endsWith('.ts') ? '' : '..',
);

export const BUNDLE_DIR = path.join(root, 'dist', 'bundle');
export const AZURE_BUNDLE_DIR = path.join(root, 'dist', 'azure');
/** The Functions app itself, beside its entry (index.js) in AZURE_BUNDLE_DIR. */
export const APP_BUNDLE = 'app.cjs';

/**
 * The worker threads (the embedded store's, the matcher's) and the extraction processes, started by URL relative to the
 * module that starts them.
 */
const WORKERS = [
  'shared/store/sqlite-reader-worker.ts',
  'shared/store/sqlite-checkpoint-worker.ts',
  'shared/knowledge/extract-worker.ts',
  'shared/matching/match-worker.ts',
];

/**
 * The scripts of the sandbox's processes, each one self-contained file (`<name>.bundle.js`, no chunk
 * beside it): a sandbox process may read its own script and nothing else of the service's.
 */
const PROCESS_SCRIPTS = ['shared/sandbox/pyodide-process.ts'];

async function buildProcessScripts(outdir: string): Promise<void> {
  await build({
    ...COMMON,
    entryPoints: PROCESS_SCRIPTS,
    outdir,
    entryNames: '[name].bundle',
    format: 'esm',
    sourcemap: false,
  });
}

/**
 * Packages left to node_modules and installed beside a bundle: Pyodide, which loads its WebAssembly and
 * standard library from its own folder, and pino-pretty, which a terminal's log lines load by name.
 */
export const INSTALLED_BESIDE = ['pyodide', 'pino-pretty'];

/**
 * Also left out: the native SQLite binding of the embedded store (optional; Azure runs on Cosmos DB), and
 * esbuild, which only runs from sources (a sandbox process's script bundled for tests, never in a bundle).
 */
const EXTERNAL = ['better-sqlite3', ...INSTALLED_BESIDE, 'esbuild'];

/** What every bundle shares. */
const COMMON = {
  absWorkingDir: root,
  bundle: true,
  platform: 'node',
  target: 'node20',
  sourcemap: 'linked',
  logLevel: 'warning',
  // V8 keeps each loaded module's source text for as long as the process runs: 7.0 MiB of the 25 MiB
  // heap at start as written, 2.4 MiB without comments and spaces. Names stay, so stack traces read.
  minifyWhitespace: true,
  minifySyntax: true,
} as const;

/** ES modules: the entries with the worker threads beside them, and chunks for what loads on first use. */
async function buildModules(entry: { in: string; out: string }, outdir: string, external: string[]): Promise<void> {
  await build({
    ...COMMON,
    entryPoints: [entry, ...WORKERS],
    outdir,
    entryNames: '[name]',
    // Chunks beside the entries: a chunk that starts a worker resolves `./<worker>.js` from its own URL.
    chunkNames: '[name]-[hash]',
    // Modules loaded on first use (the MCP SDK, the Cosmos SDK, document parsers, exporters) stay separate chunks.
    splitting: true,
    format: 'esm',
    external: [...EXTERNAL, ...external],
    // CommonJS dependencies call require(); in an ES module it has to be made.
    banner: {
      js:
        "import { createRequire as __createRequire } from 'node:module'; const require = " +
        '__createRequire(import.meta.url);',
    },
  });
}

/**
 * gpt-tokenizer's encodings, as the app imports them, and the file beside app.cjs that holds each. Their
 * tables are a third of the app's code, needed only once tokens are counted: kept out of app.cjs, they are
 * not read on every cold start.
 */
const TOKENIZER_FILES: Readonly<Record<string, string>> = {
  'gpt-tokenizer': 'tokenizer-o200k.cjs',
  'gpt-tokenizer/encoding/cl100k_base': 'tokenizer-cl100k.cjs',
};

/** The app's imports of gpt-tokenizer become require() of the files beside it (`./tokenizer-*.cjs`). */
const tokenizerBeside: Plugin = {
  name: 'tokenizer-beside',
  setup(b) {
    b.onResolve({ filter: /^gpt-tokenizer(\/|$)/ }, (args) => {
      const file = TOKENIZER_FILES[args.path];
      if (!file) return { errors: [{ text: `${args.path}: add it to TOKENIZER_FILES (scripts/bundle.ts)` }] };
      return { path: `./${file}`, external: true };
    });
  },
};

/**
 * The Functions app as one CommonJS file (dist/azure/app.cjs), which functions/bundle-entry.ts loads with
 * V8's code cache. `import.meta.url` becomes the file's own URL, so workers still start from beside it.
 */
async function buildApp(outdir: string): Promise<void> {
  const outfile = path.join(outdir, APP_BUNDLE);
  await build({
    ...COMMON,
    entryPoints: Object.entries(TOKENIZER_FILES).map(([module, file]) => ({
      in: module,
      out: file.replace(/\.cjs$/, ''),
    })),
    outdir,
    outExtension: { '.js': '.cjs' },
    format: 'cjs',
  });
  await build({
    ...COMMON,
    entryPoints: ['functions/bundled-app.ts'],
    outfile,
    format: 'cjs',
    external: [...EXTERNAL, '@azure/functions-core'],
    plugins: [tokenizerBeside],
    define: { 'import.meta.url': '__import_meta_url' },
    // import() becomes require(): a script run by node:vm has no module loader of its own.
    supported: { 'dynamic-import': false },
    // Wrapped as Node wraps a CommonJS module, so that the loader compiles the file's text as it is: no copy.
    banner: {
      js:
        '(function (exports, require, module, __filename, __dirname) { const __import_meta_url = ' +
        "require('node:url').pathToFileURL(__filename).href;",
    },
    footer: { js: '})' },
    // Licences in app.cjs.LEGAL.txt: the file itself stays ASCII, which the loader reads without decoding.
    legalComments: 'linked',
  });
  const bytes = readFileSync(outfile);
  const at = bytes.findIndex((b) => b > 0x7f);
  if (at >= 0) throw new Error(`${APP_BUNDLE} is not ASCII at byte ${at}; the loader reads it as Latin-1`);
  // The table the app registers its functions from, each group loaded on first use (functions/bundled-app.ts).
  writeFileSync(path.join(outdir, FUNCTION_TABLE), JSON.stringify(await functionTable()));
}

/**
 * Runs the bundled app once as the Functions worker would (import, then its first answer: the status
 * function, on the embedded store) and saves what V8 compiled as the code cache beside app.cjs. Where the
 * embedded store cannot open (its native module is optional), the cache holds the import only.
 */
function saveCodeCache(outdir: string): void {
  const modules = functionsCoreStandIn();
  const dataDir = mkdtempSync(path.join(tmpdir(), 'code-cache-'));
  const entry = path.join(outdir, 'index.js');
  const run = (script: string) =>
    execFileSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: outdir,
      env: firstAnswerEnv(modules, dataDir),
      stdio: ['ignore', 'ignore', 'pipe'],
      timeout: 60_000,
    });
  try {
    run(firstAnswerScript(entry, '(await entry).saveCodeCache();'));
  } catch (e) {
    const lines = String((e as { stderr?: unknown }).stderr ?? e).split('\n');
    process.stderr.write(
      `The code cache holds the import only: the first answer failed ` +
        `(${lines.find((l) => /^\w*Error: /.test(l)) ?? lines[0]})\n`,
    );
    run(`(await import(${JSON.stringify(pathToFileURL(entry).href)})).saveCodeCache(); process.exit(0);`);
  } finally {
    for (const dir of [modules, dataDir]) rmSync(dir, { recursive: true, force: true });
  }
}

export type BundleTarget = 'start' | 'azure';

export async function bundle(
  target: BundleTarget = 'start',
  outdir: string = target === 'start' ? BUNDLE_DIR : AZURE_BUNDLE_DIR,
): Promise<void> {
  rmSync(outdir, { recursive: true, force: true });
  await buildProcessScripts(outdir);
  // Azurite runs as its own process, from its own package.
  if (target === 'start') return buildModules({ in: 'scripts/start.ts', out: 'start' }, outdir, ['azurite']);
  // The Functions worker gives the app `@azure/functions-core` at run time; it is no package.
  await buildModules({ in: 'functions/bundle-entry.ts', out: 'index' }, outdir, ['@azure/functions-core']);
  await buildApp(outdir);
  saveCodeCache(outdir);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  // The per-file output (benchmarks, tools) starts the same self-contained scripts, beside its modules.
  Promise.all([
    bundle('start'),
    bundle('azure'),
    buildProcessScripts(path.join(root, 'dist', 'shared', 'sandbox')),
  ]).catch((e: unknown) => {
    process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  });
}
