// Start-up to the first 200: from spawning `node` to the first `GET /status` that answers 200, with a fresh
// DATA_DIR each time (own Azurite started, store created, key made). What `npm start` runs (the bundle)
// against tsc's per-file output of the same code and against a bare `node:http` server (Node's own floor),
// interleaved so that both see the same machine. Needs `npm run build` first.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '../scripts/azurite.js';

export interface StartupRow {
  system: string;
  ms: number[];
}

const BARE = "require('node:http').createServer((q, s) => s.end('ok')).listen(process.env.CORE_PORT, '127.0.0.1')";

/** SIGTERM, and the exit awaited: the service stops its Azurite before it exits. */
function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

async function firstOk(url: string, deadline: number): Promise<void> {
  while (performance.now() < deadline) {
    const ok = await fetch(url).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`${url} did not answer 200 in time`);
}

async function once(args: string[]): Promise<number> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'bench-startup-'));
  const [core, management] = [await freePort(), await freePort()];
  const t0 = performance.now();
  const child = spawn(process.execPath, args, {
    env: {
      ...process.env,
      DATA_DIR: dataDir,
      CORE_PORT: String(core),
      MANAGEMENT_PORT: String(management),
      LOG_LEVEL: 'warn',
    },
    stdio: 'ignore',
  });
  try {
    await firstOk(`http://127.0.0.1:${core}/status`, t0 + 30_000);
    return Math.round(performance.now() - t0);
  } finally {
    await stop(child);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

export async function benchStartup(runs = Number(process.env.BENCH_STARTUP_RUNS ?? 5)): Promise<StartupRow[]> {
  if (!existsSync('dist/bundle/start.js'))
    throw new Error('Run `npm run build` first: the start-up section starts the built service');
  const systems: [string, string[]][] = [
    ['npm start (dist/bundle/start.js)', ['dist/bundle/start.js']],
    ['the same, per-file (dist/scripts/start.js)', ['dist/scripts/start.js']],
    ['bare node:http server', ['-e', BARE]],
  ];
  const rows = systems.map(([system]) => ({ system, ms: [] as number[] }));
  // One warm-up of each (file system cache), then the runs in turn.
  for (const [, args] of systems) await once(args);
  for (let i = 0; i < runs; i++) for (const [j, [, args]] of systems.entries()) rows[j]?.ms.push(await once(args));
  return rows;
}
