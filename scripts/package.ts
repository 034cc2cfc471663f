// `npm run package`: the folder Azure Functions runs, exactly: host.json, the Functions app as esbuild
// bundles it (dist/azure, what `npm run build` makes: code and its code cache, no source maps), the portals'
// static files, a package.json whose dependencies are only the packages the bundle loads from node_modules
// (scripts/bundle.ts INSTALLED_BESIDE), and those installed at the versions the lock file pins. azd deploys it
// (azure.yaml `dist`); `func azure functionapp publish` can be run from inside it.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { FUNCTION_TABLE } from '../functions/group-loaders.js';
import { INSTALLED_BESIDE } from './bundle.js';

// From scripts/ (run by tsx, as the benchmarks import it) or dist/scripts/ (`npm run package`).
const root = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '..',
  import.meta.url.endsWith('.ts') ? '' : '..',
);
export const PACKAGE_DIR = path.join(root, '.azure-package');

/** The Node major the Function Apps run (infra: Bicep `runtime`, Terraform `runtime_version`). */
export const DEPLOYED_NODE_MAJOR = 22;

/** The Functions entry in the package (package.json `main`). */
export const PACKAGE_MAIN = 'dist/azure/index.js';

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

/** What ships of dist/azure: code, the app's code cache, its function table and its licences; no source maps. */
const shipped = (file: string): boolean =>
  /\.(js|cjs|cjs\.cache|LEGAL\.txt)$/.test(file) || path.basename(file) === FUNCTION_TABLE;

function build(): void {
  rmSync(PACKAGE_DIR, { recursive: true, force: true });
  mkdirSync(PACKAGE_DIR, { recursive: true });
  const manifest = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as Manifest;
  cpSync(path.join(root, 'dist', 'azure'), path.join(PACKAGE_DIR, 'dist', 'azure'), {
    recursive: true,
    filter: (src) => statSync(src).isDirectory() || shipped(src),
  });
  // The portals' static files, which the Core app serves at /portal/.
  cpSync(path.join(root, 'dist', 'portal'), path.join(PACKAGE_DIR, 'dist', 'portal'), { recursive: true });
  cpSync(path.join(root, 'host.json'), path.join(PACKAGE_DIR, 'host.json'));
  // What ships says what it is: no script, development or optional dependency, and only what the bundle loads.
  const { devDependencies: _d, optionalDependencies: _o, scripts: _s, dependencies, ...rest } = manifest;
  const runtime = {
    ...rest,
    main: PACKAGE_MAIN,
    dependencies: Object.fromEntries(INSTALLED_BESIDE.map((name) => [name, dependencies[name]])),
  };
  writeFileSync(path.join(PACKAGE_DIR, 'package.json'), `${JSON.stringify(runtime, null, 2)}\n`);
  // From the project's lock file, which npm prunes to these packages: the versions every test ran against.
  cpSync(path.join(root, 'package-lock.json'), path.join(PACKAGE_DIR, 'package-lock.json'));
  execFileSync(
    'npm',
    ['install', '--omit=dev', '--omit=optional', '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund'],
    { cwd: PACKAGE_DIR, stdio: ['ignore', 'ignore', 'inherit'] },
  );
  rmSync(path.join(PACKAGE_DIR, 'node_modules', '.package-lock.json'), { force: true });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  build();
  process.stdout.write(
    `Azure Functions package: ${path.relative(root, PACKAGE_DIR)} ` +
      `(${(sizeOf(PACKAGE_DIR) / 1024 / 1024).toFixed(1)} MB)\n`,
  );
  // The code cache is V8's of the Node that built it; another V8 refuses it, and the app compiles at start.
  const major = Number(process.versions.node.split('.')[0]);
  if (major !== DEPLOYED_NODE_MAJOR) {
    process.stderr.write(
      `Note: built with Node ${major}; the Function Apps run Node ${DEPLOYED_NODE_MAJOR}, whose V8 will not ` +
        `take this code cache (each cold start compiles the app). Build with Node ${DEPLOYED_NODE_MAJOR} to ` +
        `ship a cache it takes.\n`,
    );
  }
}
