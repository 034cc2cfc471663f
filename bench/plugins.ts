// `npm run bench -- plugins`: the local Python sandbox (Pyodide worker threads, as the service runs them:
// the built code, so the workers start as plain JavaScript, as in the bundle `npm start` runs). The
// cold start of the first call; a warm call of a plugin that returns at once, against a worker thread's
// message round trip (the least any call off the request thread costs), measured in the same run; a code
// interpreter run that writes a 1 MB CSV, against one that writes nothing; and the memory a warm pool holds.
import { existsSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import type { SandboxJob } from '../shared/sandbox/sandbox.js';

const BUILT = new URL('../dist/shared/sandbox/pyodide-sandbox.js', import.meta.url);

const limits = { timeoutMs: 60_000, memoryBytes: 256 * 2 ** 20, scratchBytes: 256 * 2 ** 20, outputBytes: 2 ** 20 };
const file = (name: string, text: string) => ({ name, bytes: new TextEncoder().encode(text) });
const PACKAGE = [file('bench/__init__.py', ''), file('bench/tools.py', 'def echo(args):\n    return args\n')];
const call: SandboxJob = { packageFiles: PACKAGE, workFiles: [], task: { entryPoint: 'bench.tools:echo', argument: { text: 'hello' } } };
const CSV = "with open('data.csv', 'w') as f:\n    for i in range(33000):\n        f.write('%08d,%s,%.6f\\n' % (i, 'row-%05d' % i, i / 7))\nprint('ok')";
const NOTHING = "print('ok')";

const percentile = (ms: number[], p: number) => [...ms].sort((a, b) => a - b)[Math.min(ms.length - 1, Math.floor((ms.length * p) / 100))] ?? NaN;
const round = (n: number) => Math.round(n * 100) / 100;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const rssMiB = () => Math.round(process.memoryUsage().rss / 2 ** 20);

/** A worker thread's message round trip: the floor under any call that leaves the request thread. */
async function roundTrips(n: number): Promise<number[]> {
  const worker = new Worker("require('node:worker_threads').parentPort.on('message', (m) => require('node:worker_threads').parentPort.postMessage(m))", { eval: true });
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const started = performance.now();
    await new Promise((resolve) => {
      worker.once('message', resolve);
      worker.postMessage({ text: 'hello' });
    });
    times.push(performance.now() - started);
  }
  await worker.terminate();
  return times;
}

export interface PluginsBench {
  coldMs: number;
  warm: { p50: number; p99: number; baselineP50: number };
  csv: { p50: number; nothingP50: number; bytes: number };
  rss: { before: number; warm: number };
}

export async function benchPlugins(calls = 20): Promise<PluginsBench> {
  if (!existsSync(BUILT)) throw new Error('Run `npm run build` first: the plugins section runs the built sandbox');
  const { PyodideSandbox } = (await import(BUILT.href)) as typeof import('../shared/sandbox/pyodide-sandbox.js');
  const before = rssMiB();
  const sandbox = new PyodideSandbox({ limits, warm: 2, concurrency: 2 });
  try {
    let started = performance.now();
    await sandbox.run(call);
    const coldMs = performance.now() - started;
    // Spaced calls: each finds a warm interpreter, as calls a few hundred milliseconds apart do.
    const warm: number[] = [];
    for (let i = 0; i < calls; i++) {
      await sleep(800);
      started = performance.now();
      await sandbox.run(call);
      warm.push(performance.now() - started);
    }
    await sleep(800);
    const rss = rssMiB();
    const csv: number[] = [];
    const nothing: number[] = [];
    let bytes = 0;
    for (let i = 0; i < 5; i++) {
      await sleep(800);
      started = performance.now();
      const r = await sandbox.run({ packageFiles: [], workFiles: [], task: { code: CSV } });
      csv.push(performance.now() - started);
      bytes = r.files[0]?.bytes.length ?? 0;
      await sleep(800);
      started = performance.now();
      await sandbox.run({ packageFiles: [], workFiles: [], task: { code: NOTHING } });
      nothing.push(performance.now() - started);
    }
    const baseline = await roundTrips(calls);
    return {
      coldMs: Math.round(coldMs),
      warm: { p50: round(percentile(warm, 50)), p99: round(percentile(warm, 99)), baselineP50: round(percentile(baseline, 50)) },
      csv: { p50: round(percentile(csv, 50)), nothingP50: round(percentile(nothing, 50)), bytes },
      rss: { before, warm: rss },
    };
  } finally {
    await sandbox.close();
  }
}
