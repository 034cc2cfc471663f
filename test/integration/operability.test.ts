// The first hour of an operator (issue 19): the token command the banner prints works with non-default
// settings, a busy port or equal ports fail naming the setting with nothing left running, two services with
// different DATA_DIR have their own Azurite, and the health endpoints tell live from ready.
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import { BlobServiceClient } from '@azure/storage-blob';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../scripts/azurite.js';
import type { ContainerName } from '../../shared/store/containers.js';
import type { Container, DocsOf, DocumentStore } from '../../shared/store/types.js';
import { openSqliteStore } from '../../shared/store/sqlite-store.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { runScript, startScript, type Running } from '../support/processes.js';
import { INSTANCE, tempDir } from '../support/services.js';

/** Processes whose environment names this DATA_DIR (the service and the Azurite it started). */
function processesOf(dataDir: string): number[] {
  const found: number[] = [];
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      if (readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(`DATA_DIR=${dataDir}`))
        found.push(Number(pid));
    } catch {
      // gone, or not ours to read
    }
  }
  return found;
}

/** The `KEY=value` assignments of the banner's token command. */
function bannerTokenEnv(output: string): Record<string, string> {
  const command = /TOKEN=\$\(([^)]*)npm run -s token\)/.exec(output)?.[1] ?? '';
  return Object.fromEntries(
    command
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map((a) => a.split('=', 2) as [string, string]),
  );
}

describe('npm start for an operator', () => {
  const started: Running[] = [];
  afterAll(async () => {
    for (const r of started) await r.stop();
  });

  it('prints a token command that works with non-default settings; gives each DATA_DIR its own Azurite', async () => {
    const instances = [];
    for (let i = 0; i < 2; i++) {
      const dataDir = tempDir();
      const [core, management] = [await freePort(), await freePort()];
      const t0 = performance.now();
      const running = await startScript(
        'start',
        { DATA_DIR: dataDir, CORE_PORT: String(core), MANAGEMENT_PORT: String(management) },
        /Get a token/,
      );
      started.push(running);
      instances.push({ dataDir, core, running, startMs: performance.now() - t0 });
    }
    for (const { dataDir, core, running } of instances) {
      const env = bannerTokenEnv(running.output());
      expect(env).toEqual({ CORE_PORT: String(core), DATA_DIR: dataDir });
      // Exactly what the banner says, and nothing else of the test's settings.
      const { stdout, code } = await runScript('token', [], env);
      expect(code).toBe(0);
      const r = await fetch(`http://127.0.0.1:${core}/instances/${INSTANCE}/branding`, {
        headers: { authorization: `Bearer ${stdout.trim()}` },
      });
      expect(r.status).toBe(200);
    }
    // Each has its own Azurite: a container made in one is not in the other.
    const ports = instances.map(
      ({ running }) =>
        /Azurite of this DATA_DIR on 127\.0\.0\.1:(\d+)\/(\d+)/.exec(running.output())?.slice(1).map(Number) ?? [],
    );
    expect(ports[0]).not.toEqual(ports[1]);
    // Azurite's well-known development account.
    const account =
      'AccountName=devstoreaccount1;' +
      'AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';
    const blobs = ports.map(([blob]) =>
      BlobServiceClient.fromConnectionString(
        `DefaultEndpointsProtocol=http;${account};BlobEndpoint=http://127.0.0.1:${blob}/devstoreaccount1;`,
      ),
    );
    await blobs[0]?.getContainerClient('only-in-the-first').create();
    expect(await blobs[1]?.getContainerClient('only-in-the-first').exists()).toBe(false);
    process.stdout.write(
      `npm start to banner (tsx, cold): ${instances.map((i) => `${Math.round(i.startMs)} ms`).join(', ')}\n`,
    );
  });

  it('refuses a busy port naming the setting, and leaves nothing running', async () => {
    const busy = http.createServer();
    const port = await freePort();
    await new Promise<void>((resolve) => busy.listen(port, '127.0.0.1', resolve));
    try {
      const dataDir = tempDir();
      const { code, stderr } = await runScript('start', [], {
        DATA_DIR: dataDir,
        CORE_PORT: String(port),
        MANAGEMENT_PORT: String(await freePort()),
      });
      expect(code).toBe(1);
      expect(stderr).toContain(`CORE_PORT=${port}: the port is in use`);
      expect(stderr).not.toContain('    at ');
      // The Azurite it started is gone with it.
      expect(processesOf(dataDir)).toEqual([]);
    } finally {
      busy.close();
    }
  });

  it('stops everything it started when stopped while still starting', async () => {
    const dataDir = tempDir();
    const core = await freePort();
    const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/start.ts'], {
      env: { ...process.env, DATA_DIR: dataDir, CORE_PORT: String(core), MANAGEMENT_PORT: String(await freePort()) },
      stdio: 'ignore',
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    // As soon as the API answers (its Azurite may still be starting), stop it.
    await expect
      .poll(async () => (await fetch(`http://127.0.0.1:${core}/status`).catch(() => undefined))?.status, {
        timeout: 30_000,
        interval: 10,
      })
      .toBe(200);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    await expect.poll(() => processesOf(dataDir), { timeout: 10_000 }).toEqual([]);
  });

  it('refuses equal CORE_PORT and MANAGEMENT_PORT before starting anything', async () => {
    const dataDir = tempDir();
    const { code, stderr } = await runScript('start', [], {
      DATA_DIR: dataDir,
      CORE_PORT: '7300',
      MANAGEMENT_PORT: '7300',
    });
    expect(code).toBe(1);
    expect(stderr.trim()).toBe('CORE_PORT and MANAGEMENT_PORT are both 7300: each API needs its own port');
    expect(processesOf(dataDir)).toEqual([]);
  });
});

describe('health', () => {
  let app: TestApp;
  let down = false;

  beforeAll(async () => {
    // A store that can be made to fail, as a lost database connection would.
    const real = openSqliteStore(`${tempDir()}/store.db`);
    const failing: DocumentStore = {
      ...real,
      container<N extends ContainerName>(name: N): Container<DocsOf<N>> {
        const c = real.container(name);
        return new Proxy(c, {
          get: (target, key, receiver) =>
            key === 'read' && down
              ? () => Promise.reject(new Error('the store is unreachable'))
              : (Reflect.get(target, key, receiver) as unknown),
        });
      },
      close: () => real.close(),
    };
    app = await startTestApp({}, { store: failing });
  });
  afterAll(() => app.close());

  it('answers live and ready without authentication, on both APIs', async () => {
    for (const base of [app.core, app.management]) {
      expect(await (await fetch(`${base}/health/live`)).json()).toEqual({ status: 'live' });
      const ready = await fetch(`${base}/health/ready`);
      const body: unknown = await ready.clone().json();
      expect(ready.status, JSON.stringify(body)).toBe(200);
      expect(await ready.json()).toMatchObject({
        status: 'ready',
        checks: { store: { ok: true }, blobs: { ok: true }, queues: { ok: true }, identity: { ok: true } },
      });
    }
  });

  it('is not ready while the store is unavailable, and says which check failed', async () => {
    down = true;
    await new Promise((r) => setTimeout(r, 2100));
    try {
      const ready = await fetch(`${app.core}/health/ready`);
      expect(ready.status).toBe(503);
      expect(await ready.json()).toMatchObject({
        status: 'unavailable',
        checks: { store: { ok: false, error: 'the store is unreachable' }, blobs: { ok: true } },
      });
      expect((await fetch(`${app.core}/health/live`)).status).toBe(200);
    } finally {
      down = false;
    }
  });
});
