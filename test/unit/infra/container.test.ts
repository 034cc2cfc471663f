// The container files against package.json (issue 19): CI has no Docker engine, so this holds the Dockerfile's
// stages to what the project declares: production dependencies only in the image, the build the scripts
// run, the pinned Azurite, a non-root user, the default ports, and nothing the build needs left out by
// .dockerignore. (The image itself was built with a Docker engine and measured; see the README.)
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../shared/config.js';
import { ROUTES } from '../../../functions/groups.js';

const read = (file: string) => readFileSync(file, 'utf8');
const pkg = JSON.parse(read('package.json')) as {
  scripts: Record<string, string>;
  engines: { node: string };
  devDependencies: Record<string, string>;
};

interface Stage {
  name: string;
  from: string;
  instructions: { op: string; args: string }[];
}

/** The Dockerfile's stages: each FROM with its instructions (continuation lines joined, comments dropped). */
function stages(text: string): Stage[] {
  const lines = text
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const result: Stage[] = [];
  for (const line of lines) {
    const [op = '', ...rest] = line.split(/\s+/);
    const args = rest.join(' ');
    if (op === 'FROM') {
      const [from = '', , name = ''] = rest;
      result.push({ name, from, instructions: [] });
    } else result.at(-1)?.instructions.push({ op, args });
  }
  return result;
}

describe('Dockerfile', () => {
  const dockerfile = read('Dockerfile');
  const all = stages(dockerfile);
  const stage = (name: string) => {
    const s = all.find((x) => x.name === name);
    if (!s) throw new Error(`no stage ${name}`);
    return s;
  };
  const ops = (s: Stage, op: string) => s.instructions.filter((i) => i.op === op).map((i) => i.args);

  it('ends in the all-in-one image, built on the image that serves production dependencies only', () => {
    expect(all.map((s) => s.name)).toEqual([
      'toolchain',
      'build',
      'production-dependencies',
      'azurite',
      'service',
      'standalone',
    ]);
    expect(stage('standalone').from).toBe('service');
    const service = stage('service');
    expect(ops(service, 'COPY')).toEqual([
      '--from=production-dependencies /app/node_modules ./node_modules',
      '--from=build /app/dist ./dist',
      'package.json host.json ./',
    ]);
    const production = ops(stage('production-dependencies'), 'RUN').join(' ');
    expect(production).toMatch(/npm ci --omit=dev\b/);
    // The embedded store's native module is optional to npm (dropped silently if it cannot build): not here.
    expect(
      Object.keys(
        (JSON.parse(read('package.json')) as { optionalDependencies: Record<string, string> }).optionalDependencies,
      ),
    ).toContain('better-sqlite3');
    expect(production).toContain(`require('better-sqlite3')`);
  });

  it('builds with the scripts package.json declares, from the folders the build compiles', () => {
    const build = stage('build');
    expect(ops(build, 'RUN')).toEqual(['npm ci --no-audit --no-fund', 'npm run build']);
    // The portal's API types (generated from the route table), tsc, the bundle, the portals, the build's fingerprint.
    expect(pkg.scripts.build).toBe(
      'npm run portal:types --silent && tsc -p tsconfig.build.json && node dist/scripts/bundle.js && vite build ' +
        '--config portal/vite.config.ts && node scripts/build-if-changed.mjs --stamp',
    );
    expect(pkg.scripts['portal:types']).toBe('tsx scripts/portal-api-types.ts');
    const compiled = (JSON.parse(read('tsconfig.build.json')) as { include: string[] }).include;
    const copied = ops(build, 'COPY').flatMap((a) => a.split(/\s+/).slice(0, -1));
    for (const folder of compiled) expect(copied, folder).toContain(folder);
    for (const file of ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json'])
      expect(copied).toContain(file);
  });

  it('runs what npm start runs, as the unprivileged node user, on the default ports, with a readiness check', () => {
    const service = stage('service');
    expect(pkg.scripts.start).toBe('node dist/bundle/start.js');
    expect(ops(service, 'CMD')).toEqual([JSON.stringify((pkg.scripts.start ?? '').split(' ')).replace(/,/g, ', ')]);
    expect(ops(service, 'USER')).toEqual(['node']);
    const config = loadConfig({}, 'test');
    expect(ops(service, 'EXPOSE')).toEqual([`${config.corePort} ${config.managementPort}`]);
    const health = ops(service, 'HEALTHCHECK')[0] ?? '';
    const path = /'\/(health\/[a-z]+)'/.exec(health)?.[1];
    expect(ROUTES.some((r) => r.path === `/${path}` && r.auth === 'none')).toBe(true);
    // Node of the base image satisfies the engines range.
    const node = /^ARG NODE_IMAGE=node:(\d+)-/m.exec(dockerfile)?.[1];
    expect(pkg.engines.node).toContain(`^${node}.`);
  });

  it('installs the Azurite that package.json pins, only into the all-in-one image', () => {
    expect(pkg.devDependencies.azurite).toMatch(/^\d+\.\d+\.\d+$/);
    expect(ops(stage('azurite'), 'RUN').join(' ')).toContain(
      `azurite@$(node -p "require('/app/package.json').devDependencies.azurite")`,
    );
    expect(ops(stage('standalone'), 'COPY')).toEqual([
      '--from=azurite /azurite/node_modules /opt/azurite/node_modules',
    ]);
    expect(ops(stage('service'), 'COPY').join(' ')).not.toContain('azurite');
    // Compose runs the same Azurite version beside the service image.
    expect(read('compose.yaml')).toContain(
      `image: mcr.microsoft.com/azure-storage/azurite:${pkg.devDependencies.azurite}`,
    );
    expect(read('compose.yaml')).toMatch(/build:\s+context: \.\s+target: service/);
  });

  it('sends the build everything it copies, and nothing else', () => {
    const ignore = read('.dockerignore')
      .split('\n')
      .filter((l) => l && !l.startsWith('#'));
    expect(ignore[0]).toBe('*');
    const allowed = ignore.slice(1).map((l) => l.replace(/^!/, '').replace(/\/$/, ''));
    const copied = all.flatMap((s) =>
      ops(s, 'COPY')
        .filter((a) => !a.startsWith('--from'))
        .flatMap((a) => a.split(/\s+/).slice(0, -1)),
    );
    for (const source of copied) expect(allowed, source).toContain(source);
  });
});
