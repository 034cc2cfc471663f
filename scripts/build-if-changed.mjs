// `npm start` and `npm run package` build only when the sources changed since the last build: the build
// (tsc, the bundles, the portal) takes 15 to 40 s, a start with nothing changed should not, and a package
// made while the service runs from dist/ must not delete its bundle under it. The fingerprint is a hash of
// every source file's path and content (not their times: a checkout or a copy changes those); `npm run
// build` writes it when it succeeds (`--stamp`), and this script compares it before a start or a package.
// Plain JavaScript: it runs before anything is compiled.
import { createHash } from 'node:crypto';
import { execSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath, URL } from 'node:url';
import process from 'node:process';

const root = fileURLToPath(new URL('..', import.meta.url));
const SOURCES = [
  'shared',
  'functions',
  'scripts',
  'portal',
  'package.json',
  'package-lock.json',
  'tsconfig.json',
  'tsconfig.build.json',
  'host.json',
];
const SKIP = new Set(['node_modules', 'dist', '.data']);
const STAMP = join(root, 'dist', '.build-fingerprint');
const OUTPUTS = ['bundle/start.js', 'azure/index.js', 'azure/app.cjs', 'scripts/package.js', 'portal/index.html'].map(
  (file) => join(root, 'dist', file),
);

function files(path) {
  const full = join(root, path);
  if (!existsSync(full)) return [];
  try {
    return readdirSync(full, { withFileTypes: true })
      .filter((e) => !SKIP.has(e.name))
      .flatMap((e) => (e.isDirectory() ? files(join(path, e.name)) : [join(path, e.name)]));
  } catch {
    return [path];
  }
}

function fingerprint() {
  const hash = createHash('sha256');
  for (const file of SOURCES.flatMap(files).sort())
    hash
      .update(relative(root, join(root, file)))
      .update('\0')
      .update(readFileSync(join(root, file)))
      .update('\0');
  return hash.digest('hex');
}

if (process.argv.includes('--stamp')) {
  writeFileSync(STAMP, fingerprint());
} else {
  const current = fingerprint();
  const built = existsSync(STAMP) ? readFileSync(STAMP, 'utf8') : '';
  if (built === current && OUTPUTS.every((f) => existsSync(f))) {
    process.stderr.write('Sources unchanged since the last build: using it (npm run build rebuilds)\n');
  } else {
    process.stderr.write('Building (the sources changed since the last build)...\n');
    execSync('npm run build --silent', { cwd: root, stdio: 'inherit' });
  }
}
