// Cold start of a Function App instance: a fresh `node` importing the Functions entry and answering its first
// request through the Functions adapter (`GET /instances/{id}/status`, which creates the services: store
// opened and its migrations checked, clients made). As on a scale-out, the store already exists: one
// unmeasured run of each creates it. The esbuild bundle `npm run package` ships (dist/azure) against tsc's
// per-file output of the same code (dist/functions), interleaved so that both see the same machine.
//
// Outside Azure there is no Functions worker, so the child is given a stand-in for `@azure/functions-core`
// (scripts/functions-core-stand-in.ts) and calls the status function's handler with a request shaped as the
// v4 model's. The store is the embedded one. Needs `npm run build` first.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { AZURE_BUNDLE_DIR } from '../scripts/bundle.js';
import { firstAnswerEnv, firstAnswerScript, functionsCoreStandIn } from '../scripts/functions-core-stand-in.js';

export interface ColdStartRow {
  system: string;
  /** Import plus first answer, measured inside the child (ms). */
  ms: number[];
  /** The same from spawning the process (Node's own start-up included), ms. */
  wallMs: number[];
}

async function once(
  entry: string,
  modules: string,
  dataDir: string,
): Promise<{ ms: number; wallMs: number; functions: number }> {
  const t0 = performance.now();
  const out = await new Promise<string>((resolve, reject) => {
    const script = firstAnswerScript(entry, 'process.stdout.write(JSON.stringify({ ms, functions: handlers.size }));');
    const p = spawn(process.execPath, ['--input-type=module', '-e', script], {
      cwd: path.dirname(entry),
      env: firstAnswerEnv(modules, dataDir),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    p.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    p.on('exit', (code) =>
      code === 0 ? resolve(stdout) : reject(new Error(`${entry} exited ${code}: ${stderr.slice(-500)}`)),
    );
  });
  const wallMs = performance.now() - t0;
  const { ms, functions } = JSON.parse(out) as { ms: number; functions: number };
  return { ms, wallMs, functions };
}

/** The system measured against an earlier release, when BENCH_COLD_START_BASELINE names its built checkout. */
export const BASELINE_SYSTEM = "an earlier release's per-file output (BENCH_COLD_START_BASELINE)";

export async function benchColdStart(
  runs = Number(process.env.BENCH_COLD_START_RUNS ?? 10),
): Promise<{ rows: ColdStartRow[]; functions: number }> {
  const modules = functionsCoreStandIn();
  const entries = [
    { system: 'bundle (dist/azure, what is deployed)', entry: path.join(AZURE_BUNDLE_DIR, 'index.js') },
    { system: "tsc's per-file output (dist/functions)", entry: path.resolve('dist', 'functions', 'index.js') },
  ];
  // Shared code made faster makes the per-file output faster too: an earlier release's per-file output
  // (a checkout with `npm ci` and `npx tsc -p tsconfig.build.json` run in it) is the fixed point to compare with.
  const baseline = process.env.BENCH_COLD_START_BASELINE;
  if (baseline)
    entries.push({ system: BASELINE_SYSTEM, entry: path.resolve(baseline, 'dist', 'functions', 'index.js') });
  const systems = entries.map((e) => ({ ...e, dataDir: mkdtempSync(path.join(tmpdir(), 'bench-cold-')) }));
  const rows: ColdStartRow[] = systems.map((s) => ({ system: s.system, ms: [], wallMs: [] }));
  let functions = 0;
  try {
    // One unmeasured run of each: it creates the store, and reads the files from disk once.
    for (const s of systems) await once(s.entry, modules, s.dataDir);
    for (let i = 0; i < runs; i++) {
      for (const [k, s] of systems.entries()) {
        const r = await once(s.entry, modules, s.dataDir);
        rows[k]?.ms.push(Math.round(r.ms));
        rows[k]?.wallMs.push(Math.round(r.wallMs));
        functions = r.functions;
      }
    }
  } finally {
    for (const dir of [modules, ...systems.map((s) => s.dataDir)]) rmSync(dir, { recursive: true, force: true });
  }
  return { rows, functions };
}
