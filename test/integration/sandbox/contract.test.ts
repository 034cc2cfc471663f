// One contract for both Python sandbox adapters: Pyodide in isolated processes, and Azure Container Apps dynamic
// sessions (against a local stand-in of the session pool's REST API). What a plugin returns, raises, prints
// and writes, what `svc` answers, and that no state passes from one call to the next.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PyodideSandbox } from '../../../shared/sandbox/pyodide-sandbox.js';
import { PluginFailed, type Sandbox, type SandboxFile, type SandboxJob } from '../../../shared/sandbox/sandbox.js';
import { SessionsSandbox } from '../../../shared/sandbox/sessions-sandbox.js';
import { startSessionsStandIn, type SessionsStandIn } from '../../support/sessions-stand-in.js';

const limits = {
  timeoutMs: 8_000,
  memoryBytes: 256 * 2 ** 20,
  scratchBytes: 64 * 2 ** 20,
  outputBytes: 2 ** 20,
  filesBytes: 32 * 2 ** 20,
};
const file = (name: string, text: string): SandboxFile => ({ name, bytes: new TextEncoder().encode(text) });
const text = (f: SandboxFile | undefined) => new TextDecoder().decode(f?.bytes);

const PACKAGE = [
  file('tools/__init__.py', ''),
  file(
    'tools/calls.py',
    [
      'import os',
      'seen = []',
      'def echo(args):',
      '    return {"text": args["text"], "upper": args["text"].upper()}',
      'def remember(args):',
      '    seen.append(args["user"])',
      '    return list(seen)',
      'def environment(args):',
      '    return {"env": dict(os.environ), "cwd_files": sorted(os.listdir("."))}',
      'def fails(args):',
      '    raise ValueError("the order " + args["id"] + " does not exist")',
      'def unusable(args):',
      '    return {1, 2}',
      'def spin(args):',
      '    while True:',
      '        pass',
      'def workflow(args, svc):',
      '    first = svc.complete("model-a", [{"role": "user", "content": args["user_prompt"]}])',
      '    second = svc.complete("model-b", [{"role": "user", "content": first}])',
      '    return {"completion": second, "hits": svc.search("docs", "q", 2)}',
      'def failing_svc(args, svc):',
      '    return svc.complete("nope", [])',
    ].join('\n'),
  ),
];

const call = (entryPoint: string, argument: unknown = {}, extra: Partial<SandboxJob> = {}): SandboxJob => ({
  packageFiles: PACKAGE,
  workFiles: [],
  task: { entryPoint: `tools.calls:${entryPoint}`, argument },
  ...extra,
});

let standIn: SessionsStandIn;
const adapters: Record<string, () => Sandbox> = {};
const made: Sandbox[] = [];

beforeAll(async () => {
  standIn = await startSessionsStandIn({ timeoutMs: 20_000 });
  adapters.pyodide = () => new PyodideSandbox({ limits, warm: 1, concurrency: 2 });
  adapters.sessions = () =>
    new SessionsSandbox({ endpoint: standIn.url, token: () => Promise.resolve(standIn.token), limits });
}, 120_000);

afterAll(async () => {
  await Promise.all(made.map((s) => s.close()));
  await standIn.close();
});

describe.each(['pyodide', 'sessions'])('the %s sandbox', (name) => {
  let sandbox: Sandbox;
  beforeAll(async () => {
    sandbox = (adapters[name] as () => Sandbox)();
    made.push(sandbox);
    // A process's first local call makes the interpreter snapshot (seconds on a loaded machine): not a test's deadline.
    await sandbox.run({ packageFiles: [], workFiles: [], task: { code: 'pass' } });
  }, 120_000);

  it('calls the entry point with its argument and returns what it returns', async () => {
    const result = await sandbox.run(call('echo', { text: 'hello' }));
    expect(result.value).toEqual({ text: 'hello', upper: 'HELLO' });
  }, 60_000);

  it('passes no state from one call to the next, and gives no environment', async () => {
    expect((await sandbox.run(call('remember', { user: 'alice' }))).value).toEqual(['alice']);
    expect((await sandbox.run(call('remember', { user: 'bob' }))).value).toEqual(['bob']);
    const env = (await sandbox.run(call('environment'))).value as { env: Record<string, string> };
    expect(env.env).toEqual({});
  }, 60_000);

  it('fails the call with the exception a plugin raises, and with a value that is not JSON', async () => {
    await expect(sandbox.run(call('fails', { id: '42' }))).rejects.toThrow(
      /ValueError: the order 42 does not exist \(calls\.py, line \d+\)/,
    );
    await expect(sandbox.run(call('unusable'))).rejects.toThrow(/not JSON/);
    await expect(sandbox.run(call('missing_function'))).rejects.toThrow(/AttributeError/);
  }, 60_000);

  it('ends a call at its deadline', async () => {
    const started = Date.now();
    const failure = await sandbox.run(call('spin')).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(PluginFailed);
    expect((failure as PluginFailed).reason).toBe('the call took longer than 8 s');
    expect(Date.now() - started).toBeLessThan(15_000);
    expect((await sandbox.run(call('echo', { text: 'after' }))).value).toMatchObject({ text: 'after' });
  }, 60_000);

  it('runs code in a directory holding the attachments, returning its output and the files it wrote', async () => {
    const code = [
      'import csv',
      'rows = list(csv.reader(open("orders.csv")))',
      'print("rows:", len(rows))',
      'with open("total.txt", "w") as f:',
      '    f.write(str(sum(int(r[1]) for r in rows)))',
    ].join('\n');
    const result = await sandbox.run({
      packageFiles: [],
      workFiles: [file('orders.csv', 'a,1\nb,2\nc,39\n')],
      task: { code },
    });
    expect(result.stdout).toBe('rows: 3\n');
    expect(result.files.map((f) => f.name)).toEqual(['total.txt']);
    expect(text(result.files[0])).toBe('42');
  }, 60_000);

  it("answers a workflow plugin's svc calls in order, and gives it a failed call's reason", async () => {
    const asked: [string, Record<string, unknown>][] = [];
    const svc = (method: string, args: Record<string, unknown>) => {
      asked.push([method, args]);
      if (method === 'search') return Promise.resolve([{ id: '1', text: 'passage' }]);
      if (args.ai_model_object_id === 'nope') return Promise.reject(new Error('nope is not a completion model'));
      return Promise.resolve(
        `${String(args.ai_model_object_id)} says ${String((args.messages as { content: string }[])[0]?.content)}`,
      );
    };
    const result = await sandbox.run({
      packageFiles: PACKAGE,
      workFiles: [],
      task: { entryPoint: 'tools.calls:workflow', argument: { user_prompt: 'hi' }, svc },
    });
    expect(result.value).toEqual({ completion: 'model-b says model-a says hi', hits: [{ id: '1', text: 'passage' }] });
    // Each call asked once (the sessions adapter runs the plugin again for each answer, with the earlier ones).
    expect(asked.map(([m, a]) => [m, a.ai_model_object_id ?? a.index_name])).toEqual([
      ['complete', 'model-a'],
      ['complete', 'model-b'],
      ['search', 'docs'],
    ]);
    await expect(
      sandbox.run({
        packageFiles: PACKAGE,
        workFiles: [],
        task: { entryPoint: 'tools.calls:failing_svc', argument: {}, svc },
      }),
    ).rejects.toThrow(/RuntimeError: svc.complete: nope is not a completion model/);
  }, 60_000);
});
