// Hostile plugins against the service as `npm start` runs it: each plugin below breaks a limit or reaches for
// the host (the network, the environment, files, processes, the JavaScript bridge). Each fails its own call
// with a clear reason the model reads, GET /status keeps answering meanwhile (the slowest answer is printed;
// the bound asserted is a freeze, not a speed: speed is the benchmarks'), and the next call of another
// plugin works.
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockLlm, type MockLlm } from '../../../scripts/mock-llm.js';
import { seedAgent } from '../../support/agents.js';
import { startBundledApp, type BundledApp } from '../../support/bundled-app.js';
import { runnable, uploadPackage } from '../../support/packages.js';
import { INSTANCE } from '../../support/services.js';
import { complete, objectId, updateAgent, upsert } from '../knowledge/support.js';

const HOSTILE: Record<string, string> = {
  spin: 'while True:\n        pass',
  allocate: 'return len([bytearray(2**20) for _ in range(4096)])',
  recurse: 'import sys\n    sys.setrecursionlimit(10**6)\n    def down(n):\n        return down(n + 1)\n    return down(0)',
  environment: 'import os\n    return dict(os.environ)',
  passwd: 'return open("/etc/passwd").read()',
  connect: 'import socket\n    s = socket.create_connection(("127.0.0.1", args["port"]), timeout=2)\n    s.sendall(b"hello")\n    return "connected"',
  spawn: 'import subprocess\n    return subprocess.run(["id"], capture_output=True).stdout.decode()',
  fill: 'with open("big.bin", "wb") as f:\n        for _ in range(1024):\n            f.write(b"x" * 2**20)\n    return "wrote"',
  shout: 'for _ in range(100):\n        print("x" * 2**20)\n    return "printed"',
  bridge: 'import js\n    return str(js.process.env)',
  api: 'import pyodide_js\n    return str(pyodide_js)',
  run_js: 'from pyodide.code import run_js\n    return run_js("process.env")',
};

const MODULE = [
  'def echo(args):',
  '    return "echo " + args["text"]',
  ...Object.entries(HOSTILE).flatMap(([name, body]) => [`def ${name}(args):`, `    ${body}`]),
].join('\n');

const PLUGINS = [
  { name: 'echo', category: 'agent tool', entry_point: 'hostile.plugins:echo', parameters: [{ name: 'text', type: 'string' }] },
  ...Object.keys(HOSTILE).map((name) => ({ name, category: 'agent tool', entry_point: `hostile.plugins:${name}`, parameters: [{ name: 'port', type: 'int', default_value: 0 }] })),
];

/** What each plugin's call gives the model. */
const EXPECTED: Record<string, RegExp> = {
  spin: /^Error: the call took longer than 3 s$/,
  allocate: /^Error: MemoryError/,
  recurse: /^Error: (RecursionError|the interpreter stopped)/,
  environment: /^\{\}$/,
  passwd: /^Error: FileNotFoundError: \[Errno 44\] No such file or directory: '\/etc\/passwd'/,
  connect: /^Error: PermissionError/,
  spawn: /^Error: OSError: \[Errno 138\] emscripten does not support processes/,
  fill: /^Error: the plugin wrote more than 64 MiB to files$/,
  shout: /^Error: the plugin printed more than 1 MiB$/,
  bridge: /^Error: ModuleNotFoundError: No module named 'js'/,
  api: /^Error: ModuleNotFoundError: No module named 'pyodide_js'/,
  run_js: /^Error: ModuleNotFoundError: No module named 'js'/,
};

describe('hostile plugins', () => {
  let llm: MockLlm;
  let app: BundledApp;
  let listener: net.Server;
  let port = 0;
  const connections: string[] = [];

  beforeAll(async () => {
    listener = net.createServer((socket) => {
      connections.push(String(socket.remoteAddress));
      socket.destroy();
    });
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    port = (listener.address() as net.AddressInfo).port;
    llm = await startMockLlm();
    app = await startBundledApp({ ALLOW_PRIVATE_NETWORK: 'true', PLUGIN_TIMEOUT_SECONDS: '3', PLUGIN_MEMORY_MB: '64', SVC_SECRET_PROBE: 'must-not-leak' });
    const bytes = await runnable('hostile', '1.0.0', PLUGINS, { 'hostile/__init__.py': '', 'hostile/plugins.py': MODULE });
    const uploaded = await uploadPackage(app, INSTANCE, 'Python-hostile', bytes, { type: 'plugin-package', name: 'Python-hostile', package_runtime: 'Python', package_version: '1.0.0' });
    expect(uploaded.status, JSON.stringify(uploaded.body)).toBe(200);
    await seedAgent(app, 'target', { llmUrl: llm.url });
    for (const p of PLUGINS) await upsert(app, 'Svc.Agent', 'tools', p.name.replace('_', '-'), { tool_type: 'plugin', plugin_object_id: `/instances/${INSTANCE}/providers/Svc.Platform/plugins/Python-hostile-${p.name}` });
    await updateAgent(app, 'target', { tool_object_ids: PLUGINS.map((p) => objectId('Svc.Agent', 'tools', p.name.replace('_', '-'))) });
    // The service's first sandbox call makes its interpreter snapshot: done before the cases.
    expect((await callPlugin('echo', { text: 'warm' })).result).toBe('echo warm');
  }, 120_000);
  afterAll(async () => {
    await app.stop();
    await llm.close();
    listener.close();
  });

  /** The tool result the model got for one call of `name`, and the slowest GET /status while it ran. */
  async function callPlugin(name: string, args: Record<string, unknown> = {}) {
    llm.next({ toolCalls: [{ name, arguments: args }] });
    let slowest = 0;
    const done = new AbortController();
    const probe = (async () => {
      while (!done.signal.aborted) {
        const started = performance.now();
        const r = await fetch(`${app.core}/status`);
        await r.arrayBuffer();
        slowest = Math.max(slowest, performance.now() - started);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    })();
    const r = await complete(app, 'target', `call ${name}`);
    done.abort();
    await probe;
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return { result: r.body.completion.replace(/^Tools said: /, ''), slowest };
  }

  for (const name of Object.keys(HOSTILE)) {
    it(`${name}: fails its own call only, with a clear reason`, async () => {
      const { result, slowest } = await callPlugin(name, name === 'connect' ? { port } : {});
      expect(result).toMatch(EXPECTED[name] as RegExp);
      expect(result).not.toContain('must-not-leak');
      process.stdout.write(`hostile plugin ${name}: slowest GET /status meanwhile ${slowest.toFixed(1)} ms\n`);
      expect(slowest).toBeLessThan(2000);
      expect((await callPlugin('echo', { text: `after ${name}` })).result).toBe(`echo after ${name}`);
    }, 60_000);
  }

  it('let no connection reach the loopback server', () => {
    expect(connections).toEqual([]);
  });
});
