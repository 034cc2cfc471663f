// `npm run package`: the folder Azure Functions runs, exactly: host.json, the compiled functions and shared
// code, a package.json without scripts or development dependencies, and production dependencies only
// (the embedded store's optional native SQLite binding stays out: Azure runs on Cosmos DB). azd deploys it
// (azure.yaml `dist`); `func azure functionapp publish` can be run from inside it.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const PACKAGE_DIR = path.join(root, '.azure-package');

interface Manifest {
  name: string;
  version: string;
  type: string;
  main: string;
  engines: unknown;
  dependencies: Record<string, string>;
  overrides?: unknown;
  [k: string]: unknown;
}

/** Total size of a folder, bytes. */
export function sizeOf(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    total += entry.isDirectory() ? sizeOf(p) : entry.isFile() ? statSync(p).size : 0;
  }
  return total;
}

function build(): void {
  rmSync(PACKAGE_DIR, { recursive: true, force: true });
  mkdirSync(PACKAGE_DIR, { recursive: true });
  const manifest = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as Manifest;
  // Compiled code only: no sources, maps, tests, benchmarks or local scripts.
  for (const folder of ['functions', 'shared']) {
    cpSync(path.join(root, 'dist', folder), path.join(PACKAGE_DIR, 'dist', folder), { recursive: true, filter: (src) => statSync(src).isDirectory() || src.endsWith('.js') });
  }
  // The portals' static files, which the Core app serves at /portal/.
  cpSync(path.join(root, 'dist', 'portal'), path.join(PACKAGE_DIR, 'dist', 'portal'), { recursive: true });
  cpSync(path.join(root, 'host.json'), path.join(PACKAGE_DIR, 'host.json'));
  cpSync(path.join(root, 'package-lock.json'), path.join(PACKAGE_DIR, 'package-lock.json'));
  writeFileSync(path.join(PACKAGE_DIR, 'package.json'), JSON.stringify({ ...manifest, scripts: {} }, null, 2));
  execFileSync('npm', ['ci', '--omit=dev', '--omit=optional', '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund'], { cwd: PACKAGE_DIR, stdio: ['ignore', 'ignore', 'inherit'] });
  // What ships says what it is: no development or optional dependency is declared either.
  const { devDependencies: _d, optionalDependencies: _o, scripts: _s, ...runtime } = manifest;
  writeFileSync(path.join(PACKAGE_DIR, 'package.json'), `${JSON.stringify(runtime, null, 2)}\n`);
  rmSync(path.join(PACKAGE_DIR, 'node_modules', '.package-lock.json'), { force: true });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  build();
  process.stdout.write(`Azure Functions package: ${path.relative(root, PACKAGE_DIR)} (${(sizeOf(PACKAGE_DIR) / 1024 / 1024).toFixed(1)} MB)\n`);
}
