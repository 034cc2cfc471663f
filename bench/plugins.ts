// `npm run bench -- plugins`: the local Python sandbox (Pyodide in isolated processes, as the service runs
// them: the built code, as in the bundle `npm start` runs). The cold start of the first call; a warm call of a
// plugin that returns at once, against a worker thread's message round trip (the least any call off the
// request thread costs), measured in the same run; a code interpreter run that writes a 1 MB CSV, against one
// that writes nothing; the memory a warm pool holds. Then what a user waits for: a completion whose model
// calls the code interpreter, through the HTTP API of the service as `npm start` runs it, from the request
// to the answer (the first call of a fresh service, later calls spaced and back to back), against the same
// completion without the tool call in the same run.
import { existsSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import type { SandboxJob } from '../shared/sandbox/sandbox.js';
import { startMockLlm } from '../scripts/mock-llm.js';
import { seed } from './completions.js';
import { rssMiB as rssOf, startService } from './peers.js';

const BUILT = new URL('../dist/shared/sandbox/pyodide-sandbox.js', import.meta.url);

const limits = {
  timeoutMs: 60_000,
  memoryBytes: 256 * 2 ** 20,
  scratchBytes: 256 * 2 ** 20,
  outputBytes: 2 ** 20,
  filesBytes: 32 * 2 ** 20,
};
const file = (name: string, text: string) => ({ name, bytes: new TextEncoder().encode(text) });
const PACKAGE = [file('bench/__init__.py', ''), file('bench/tools.py', 'def echo(args):\n    return args\n')];
const call: SandboxJob = {
  packageFiles: PACKAGE,
  workFiles: [],
  task: { entryPoint: 'bench.tools:echo', argument: { text: 'hello' } },
};
const CSV =
  "with open('data.csv', 'w') as f:\n    for i in range(33000):\n        f.write('%08d,%s,%.6f\\n' % (i, " +
  "'row-%05d' % i, i / 7))\nprint('ok')";
const NOTHING = "print('ok')";

const percentile = (ms: number[], p: number) =>
  [...ms].sort((a, b) => a - b)[Math.min(ms.length - 1, Math.floor((ms.length * p) / 100))] ?? NaN;
const round = (n: number) => Math.round(n * 100) / 100;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const rssMiB = () => Math.round(process.memoryUsage().rss / 2 ** 20);

/** A worker thread's message round trip: the floor under any call that leaves the request thread. */
async function roundTrips(n: number): Promise<number[]> {
  const worker = new Worker(
    "require('node:worker_threads').parentPort.on('message', (m) => " +
      "require('node:worker_threads').parentPort.postMessage(m))",
    { eval: true },
  );
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
      warm: {
        p50: round(percentile(warm, 50)),
        p99: round(percentile(warm, 99)),
        baselineP50: round(percentile(baseline, 50)),
      },
      csv: { p50: round(percentile(csv, 50)), nothingP50: round(percentile(nothing, 50)), bytes },
      rss: { before, warm: rss },
    };
  } finally {
    await sandbox.close();
  }
}

export interface InterpreterBench {
  firstMs: number;
  spaced: { p50: number; p99: number };
  backToBack: { p50: number; p99: number };
  withoutToolP50: number;
  serviceRss: { before: number; after: number };
}

/**
 * A completion whose model runs `print(sum(range(10)))` with the code interpreter, timed from the request to the
 * answer.
 */
export async function benchCodeInterpreter(calls = 20): Promise<InterpreterBench> {
  const llm = await startMockLlm();
  const service = await startService();
  try {
    const app = {
      management: service.management,
      instanceId: service.instanceId,
      auth: { authorization: `Bearer ${service.token}` },
    };
    await seed(app, llm.url);
    const tool = `/instances/${service.instanceId}/providers/Svc.Agent/tools/interpreter`;
    const post = async (path: string, body: Record<string, unknown>) => {
      const r = await fetch(`${service.management}/instances/${service.instanceId}/providers/${path}`, {
        method: 'POST',
        headers: { ...app.auth, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      if (r.status !== 200) throw new Error(`${path}: ${r.status} ${await r.text()}`);
    };
    await post('Svc.Agent/tools/interpreter', { name: 'interpreter', tool_type: 'code-interpreter' });
    await post('Svc.Agent/workflows/w', {
      name: 'w',
      workflow_type: 'chat',
      workflow_host: 'builtin',
      main_ai_model_object_id: `/instances/${service.instanceId}/providers/Svc.AIModel/aiModels/m`,
      main_prompt_object_id: `/instances/${service.instanceId}/providers/Svc.Prompt/prompts/p`,
    });
    await post('Svc.Agent/agents/bench', {
      name: 'bench',
      workflow_object_id: `/instances/${service.instanceId}/providers/Svc.Agent/workflows/w`,
      tool_object_ids: [tool],
    });
    const complete = async (withTool: boolean) => {
      if (withTool) llm.next({ toolCalls: [{ name: 'python', arguments: { code: 'print(sum(range(10)))' } }] });
      const started = performance.now();
      const r = await fetch(`${service.core}/instances/${service.instanceId}/completions`, {
        method: 'POST',
        headers: { ...app.auth, 'content-type': 'application/json' },
        body: JSON.stringify({ agent_name: 'bench', user_prompt: 'What is the sum of 0 to 9?' }),
      });
      const body = (await r.json()) as { completion?: string };
      const ms = performance.now() - started;
      if (withTool && body.completion?.trim() !== 'Tools said: 45')
        throw new Error(`the code interpreter answered ${JSON.stringify(body)}`);
      return ms;
    };
    const before = rssOf(service.process.pid as number);
    const firstMs = await complete(true);
    const spaced: number[] = [];
    for (let i = 0; i < calls; i++) {
      await sleep(800);
      spaced.push(await complete(true));
    }
    const backToBack: number[] = [];
    for (let i = 0; i < calls; i++) backToBack.push(await complete(true));
    const without: number[] = [];
    for (let i = 0; i < calls; i++) without.push(await complete(false));
    return {
      firstMs: Math.round(firstMs),
      spaced: { p50: round(percentile(spaced, 50)), p99: round(percentile(spaced, 99)) },
      backToBack: { p50: round(percentile(backToBack, 50)), p99: round(percentile(backToBack, 99)) },
      withoutToolP50: round(percentile(without, 50)),
      serviceRss: { before: Math.round(before), after: Math.round(rssOf(service.process.pid as number)) },
    };
  } finally {
    service.process.kill('SIGTERM');
    await llm.close();
  }
}
