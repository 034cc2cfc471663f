// The package azd deploys to Azure Functions is exactly what runs: the bundled app, host.json, and only the
// packages the bundle loads from node_modules; it stays small (40 MB at most), and it starts (every module it
// loads is in it, telemetry's exporters included).
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { INSTALLED_BESIDE } from '../../scripts/bundle.js';
import { functionsCoreStandIn } from '../../scripts/functions-core-stand-in.js';
import { PACKAGE_MAIN, sizeOf } from '../../scripts/package.js';

const run = promisify(execFile);
const dir = path.resolve('.azure-package');

/** Installed package folders, relative to the package root (nested node_modules included). */
function installed(base = path.join(dir, 'node_modules'), prefix = 'node_modules'): string[] {
  if (!existsSync(base)) return [];
  const out: string[] = [];
  for (const entry of readdirSync(base, { withFileTypes: true })) {
    if (!entry.isDirectory() || entry.name.startsWith('.')) continue;
    const names = entry.name.startsWith('@')
      ? readdirSync(path.join(base, entry.name)).map((n) => `${entry.name}/${n}`)
      : [entry.name];
    for (const name of names) {
      out.push(`${prefix}/${name}`);
      out.push(...installed(path.join(base, name, 'node_modules'), `${prefix}/${name}/node_modules`));
    }
  }
  return out;
}

describe('the Azure Functions package', () => {
  let output = '';
  beforeAll(async () => {
    output = (await run('npm', ['run', '--silent', 'package'], { maxBuffer: 16 * 1024 * 1024 })).stdout;
  }, 240_000);

  it('holds the bundled app, host.json and the packages the bundle loads, nothing else', () => {
    expect(readdirSync(dir).sort()).toEqual(['dist', 'host.json', 'node_modules', 'package-lock.json', 'package.json']);
    // The bundle (code only, no source maps: the app, its code cache, its function table and its licences, the
    // entry and the workers' modules), and the portals' static files the Core app serves at /portal/.
    expect(readdirSync(path.join(dir, 'dist')).sort()).toEqual(['azure', 'portal']);
    expect(readdirSync(path.join(dir, 'dist', 'azure')).filter((f) => !f.endsWith('.js'))).toEqual([
      'app.cjs',
      'app.cjs.LEGAL.txt',
      'app.cjs.cache',
      'functions.json',
      'tokenizer-cl100k.cjs',
      'tokenizer-o200k.cjs',
    ]);
    expect(readdirSync(path.join(dir, 'dist', 'portal'))).toEqual(
      expect.arrayContaining(['index.html', 'manage.html', 'assets']),
    );
    const manifest = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as Record<string, unknown>;
    expect(manifest.devDependencies).toBeUndefined();
    expect(manifest.optionalDependencies).toBeUndefined();
    expect(manifest.main).toBe(PACKAGE_MAIN);
    expect(Object.keys(manifest.dependencies as object).sort()).toEqual([...INSTALLED_BESIDE].sort());
    const lock = JSON.parse(readFileSync(path.join(dir, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { dev?: boolean; optional?: boolean; devOptional?: boolean }>;
    };
    const packages = installed();
    for (const p of packages) {
      const entry = lock.packages[p];
      expect(entry, `${p} is in the lock file`).toBeDefined();
      expect(entry?.dev, `${p} is not a development dependency`).not.toBe(true);
      expect(entry?.optional, `${p} is not optional`).not.toBe(true);
    }
    for (const name of Object.keys(manifest.dependencies as object)) expect(packages).toContain(`node_modules/${name}`);
    for (const devOnly of [
      'vitest',
      'typescript',
      'azurite',
      'tsx',
      'eslint',
      'better-sqlite3',
      '@vercel/cosmosdb-server',
    ])
      expect(packages).not.toContain(`node_modules/${devOnly}`);
    // Bundled, so not installed: the SDKs and the telemetry exporters are in dist/azure.
    for (const bundled of [
      '@azure/cosmos',
      '@azure/functions',
      'zod',
      '@opentelemetry/api',
      '@azure/monitor-opentelemetry-exporter',
      'gpt-tokenizer',
    ])
      expect(packages).not.toContain(`node_modules/${bundled}`);
    expect(sizeOf(dir)).toBeLessThanOrEqual(40 * 1024 * 1024);
    process.stdout.write(`${output.trim()}\n`);
  });

  it('ships every file the app requires from beside it: the tokenizers, read on first use, count tokens', () => {
    const azure = path.join(dir, 'dist', 'azure');
    const beside = [...readFileSync(path.join(azure, 'app.cjs'), 'latin1').matchAll(/require\("\.\/([^"]+)"\)/g)].map(
      (m) => m[1] ?? '',
    );
    expect(beside.sort()).toEqual(['tokenizer-cl100k.cjs', 'tokenizer-o200k.cjs']);
    for (const file of beside) expect(existsSync(path.join(azure, file)), file).toBe(true);
    const load = createRequire(path.join(azure, 'app.cjs'));
    expect((load('./tokenizer-o200k.cjs') as typeof import('gpt-tokenizer')).countTokens('hello world')).toBe(2);
    expect(
      (load('./tokenizer-cl100k.cjs') as typeof import('gpt-tokenizer/encoding/cl100k_base')).encode('hello world'),
    ).toEqual([15339, 1917]);
  });

  it('loads its entry point with its code cache and every module it needs, telemetry included', async () => {
    const env = {
      PATH: process.env.PATH ?? '',
      SERVICE_APIS: 'core,management',
      STORE: 'cosmos',
      COSMOS_ENDPOINT: 'https://example.documents.azure.com:443/',
      STORAGE_ACCOUNT_NAME: 'example',
      APPLICATIONINSIGHTS_CONNECTION_STRING:
        'InstrumentationKey=00000000-0000-0000-0000-000000000000;' +
        'IngestionEndpoint=https://example.in.applicationinsights.azure.com/',
      AZURE_CLIENT_ID: '00000000-0000-0000-0000-000000000001',
    };
    const modules = functionsCoreStandIn();
    try {
      const script =
        `const { codeCache } = await import('./${PACKAGE_MAIN}'); const { handlers } = (await ` +
        `import('node:module')).createRequire(import.meta.url)('@azure/functions-core'); console.log(codeCache, ` +
        `[...handlers.keys()].join(' ')); process.exit(0);`;
      const { stdout, stderr } = await run(process.execPath, ['--input-type=module', '-e', script], {
        cwd: dir,
        env: { ...env, NODE_PATH: modules },
      });
      expect(stderr).not.toMatch(/Cannot find (module|package)/);
      // Built with this Node, so V8 takes the code cache; then every group registered: both APIs' routes,
      // and the queue triggers beside the Core API.
      const [cache, ...names] = stdout.trim().split(' ');
      expect(cache).toBe('taken');
      expect(names.length).toBeGreaterThan(150);
      expect(names).toEqual(
        expect.arrayContaining(['status-core-instance', 'completions-create', 'aiModels-list', 'completions-worker']),
      );
    } finally {
      rmSync(modules, { recursive: true, force: true });
    }
  }, 60_000);
});
