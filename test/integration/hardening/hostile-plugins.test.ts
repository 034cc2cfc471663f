// The hostile sandbox matrix, against the service as `npm start` runs it, as a user with Reader on one agent:
// each case is Python that breaks a limit or reaches for the host (a program, the JavaScript around Python,
// ctypes on Emscripten's functions, the network, files, memory, time), run once as the code interpreter's
// code and once as a plugin's function. Each fails its own call with its reason; no host program runs (the
// marker file stays absent, and no process of the service's tree ever has a child it should not have); no
// connection reaches a loopback listener; the next call starts clean; the service's memory and GET /status
// hold while the cases run, four at a time at the end.
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockLlm, type MockLlm } from '../../../scripts/mock-llm.js';
import { grantReader, seedAgent } from '../../support/agents.js';
import { startBundledApp, type BundledApp } from '../../support/bundled-app.js';
import { runnable, uploadPackage } from '../../support/packages.js';
import { INSTANCE, tempDir } from '../../support/services.js';
import { complete, objectId, updateAgent, upsert } from '../knowledge/support.js';

const MARKER = path.join(tempDir(), 'marker.txt');
const READER = 'mallory@example.com';

/**
 * Reaches JavaScript's global object from Python: a getter on Object.prototype and an Emscripten function that reads a
 * global.
 */
const GLOBAL = `
from pyodide.ffi import to_js, create_proxy
import ctypes
_got = []
_Object = to_js([1]).constructor.prototype.__proto__.constructor
_Object.defineProperty(_Object.prototype, 'devicePixelRatio', to_js(
    {'get': create_proxy(lambda this, *a: _got.append(this), capture_this=True), 'configurable': True},
    dict_converter=_Object.fromEntries))
ctypes.PyDLL(None).emscripten_get_device_pixel_ratio()
g = _got[0]
def attempt(name, f):
    try:
        return name + ': ' + str(f())
    except BaseException as e:
        return name + ': refused (' + type(e).__name__ + ')'
`;

/**
 * Writes raw bytes to the process's standard output, the channel its answers go back on: the Emscripten module
 * (reached with a getter and an Emscripten function that reads it), then its host file system driver's write.
 */
const RAW = `
from pyodide.ffi import to_js, create_proxy
import ctypes, json, struct, time
_O = to_js({}).constructor
_got = []
def _trap(this):
    if not _got and _O.prototype.hasOwnProperty.call(this, 'HEAP8'):
        _got.append(this)
_O.defineProperty(_O.prototype, 'Py_EmscriptenSignalBuffer', to_js(
    {'get': create_proxy(_trap, capture_this=True), 'configurable': True}, dict_converter=_O.fromEntries))
ctypes.pythonapi._Py_CheckEmscriptenSignals_Helper()
_O.defineProperty(_O.prototype, 'Py_EmscriptenSignalBuffer', to_js(
    {'value': None, 'configurable': True, 'writable': True}, dict_converter=_O.fromEntries))
_out = to_js({'nfd': 1}, dict_converter=_O.fromEntries)
def send_raw(data):
    b = to_js(memoryview(data))
    at = 0
    while at < len(data):
        try:
            at += _got[0].NODEFS.stream_ops.write(_out, b, at, len(data) - at, None)
        except Exception:
            time.sleep(0.001)
def frame(header, body=b''):
    h = json.dumps(header).encode()
    return struct.pack('<II', len(h), len(body)) + h + body
`;

/** Emscripten functions that would reach the host, each given a payload that writes the marker if it ran. */
const EMSCRIPTEN = [
  'emscripten_run_script',
  'emscripten_run_script_int',
  'emscripten_run_script_string',
  'emscripten_async_run_script',
  'emscripten_async_load_script',
  'emscripten_websocket_new',
  'emscripten_async_wget',
  'emscripten_async_wget_data',
  'emscripten_create_worker',
  '_emscripten_system',
];

/** Each case sets `result` (or raises); the code interpreter prints it, the plugin returns it. */
const CASES: Record<string, { code: string; expect: RegExp }> = {
  os_system: {
    code: `import os\nresult = os.system("id > ${MARKER}")`,
    expect: /^Error: AttributeError: module 'os' has no attribute 'system'/,
  },
  os_popen: {
    code: `import os\nresult = os.popen("id > ${MARKER}").read()`,
    expect: /^Error: AttributeError: module 'os' has no attribute 'popen'/,
  },
  os_exec: {
    code: `import os\nos.execv("/bin/sh", ["sh", "-c", "id > ${MARKER}"])`,
    expect: /^Error: AttributeError: module 'os' has no attribute 'execv'/,
  },
  posix: {
    code: `import posix, importlib\nimportlib.reload(posix)\nresult = posix.system("id > ${MARKER}")`,
    expect: /^Error: AttributeError: module 'posix' has no attribute 'system'/,
  },
  fork_bomb: {
    code: 'import os\nwhile True:\n    os.fork()',
    expect: /^Error: AttributeError: module 'os' has no attribute 'fork'/,
  },
  subprocess: {
    code: 'import subprocess\nresult = subprocess.run(["id"], capture_output=True).stdout.decode()',
    expect: /^Error: OSError: \[Errno 138\] emscripten does not support processes/,
  },
  ctypes: {
    code:
      `import ctypes\nlib = ctypes.PyDLL(None)\npayload = ` +
      `ctypes.c_char_p(b"require('child_process').execSync('id > ${MARKER}')")\nresult = ' '.join(n + '=' + ` +
      `str(getattr(lib, n)(payload, payload, payload, payload)) for n in ${JSON.stringify(EMSCRIPTEN)})`,
    expect: new RegExp(`^${EMSCRIPTEN.map((n) => `${n}=(0|-1)`).join(' ')}$`),
  },
  javascript: {
    code: `${GLOBAL}
result = ' | '.join([
    attempt('Function', lambda: g.Function("return process.getBuiltinModule('child_process').execSync('id')")()),
    attempt('child_process', lambda: g.process.getBuiltinModule('child_process').execSync('id > ${MARKER}')),
    attempt('binding', lambda: g.process.binding('spawn_sync')),
    attempt('dlopen', lambda: g.process.dlopen(to_js({}), '/lib/x86_64-linux-gnu/libc.so.6')),
    attempt('require', lambda: g.require('child_process')),
    attempt('net', lambda: g.process.getBuiltinModule('net').connect(1)),
    attempt('fetch', lambda: g.fetch('http://127.0.0.1:1/')),
])`,
    expect: new RegExp(
      /^Function: refused \(JsException\) \| child_process: refused \(\w+\) \| binding: refused \(\w+\) \| /.source +
        /dlopen: refused \(\w+\) \| require: refused \(\w+\) \| net: refused \(\w+\) \| fetch: refused \(\w+\)$/.source,
    ),
  },
  socket_python: {
    code:
      'import socket\ns = socket.create_connection(("127.0.0.1", PORT), timeout=2)\ns.sendall(b"hello")\nresult ' +
      '= "connected"',
    expect: /^Error: PermissionError/,
  },
  socket_js: {
    code:
      `${GLOBAL}\nresult = attempt('connect', lambda: g.process.getBuiltinModule('net').connect(PORT, ` +
      `'127.0.0.1')) + ' | ' + attempt('socket', lambda: g.WebSocket('ws://127.0.0.1:' + str(PORT)))`,
    expect: /^connect: refused \(\w+\) \| socket: refused \(\w+\)$/,
  },
  // Questions to the service, written as fast as the pipe takes them, answers never read.
  flood: {
    code:
      `${RAW}\nburst = frame({'type': 'svc', 'method': 'complete', 'args': '{}'}) * 2048\nwhile True:\n    ` +
      `send_raw(burst)`,
    expect: /^Error: the sandbox asked the service something in a call that may not ask$/,
  },
  // An answer of its own making: more output than is kept, and a file outside its working directory.
  forge: {
    code:
      `${RAW}\nout = b'A' * (4 * 2**20)\nsend_raw(frame({'type': 'done', 'answer': 2, 'stdout': len(out), ` +
      `'files': [{'name': '../escape', 'size': 1}]}, b'{}' + out + b'x'))\ntime.sleep(10)`,
    expect: /^Error: the sandbox answered something it should not$/,
  },
  tamper: {
    code:
      'import json, builtins, sys\njson.dumps = lambda *a, **k: "tampered"\nbuiltins.len = lambda x: ' +
      '-1\nopen(json.__file__, "w").write("raise SystemExit")\nsys.modules["os"] = None\nresult = "tampered"',
    // The call may break its own run (the runner uses what it replaced); the next call is what must be clean.
    expect: /^(tampered|Error: .+)$/,
  },
  clean: { code: 'import json\nresult = json.dumps([len("abc")])', expect: /^\[3\]$/ },
  sparse: {
    code: 'f = open("sparse.bin", "wb")\nf.seek(600 * 2**20)\nf.write(b"x")\nf.close()\nresult = "wrote"',
    expect: /^Error: the plugin wrote more than 64 MiB to files$/,
  },
  truncate: {
    code: 'import os\nopen("t.bin", "wb").close()\nos.truncate("t.bin", 600 * 2**20)\nresult = "truncated"',
    expect: /^Error: the plugin wrote more than 64 MiB to files$/,
  },
  pipes: {
    code:
      'import os\nkept = []\nfor _ in range(4096):\n    r, w = os.pipe()\n    os.write(w, b"x" * 2**20)\n    ' +
      'kept.append((r, w))\nresult = len(kept)',
    expect: /^Error: the call needed more than 448 MiB of memory/,
  },
  to_js: {
    code:
      'from pyodide.ffi import to_js\nb = bytearray(2**20 * 16)\nkept = [to_js(b) for _ in range(200)]\nresult ' +
      '= len(kept)',
    expect: /^Error: (the call needed more than 448 MiB of memory|ConversionError)/,
  },
  sleep: { code: 'import time\ntime.sleep(120)\nresult = "slept"', expect: /^Error: the call took longer than 3 s$/ },
  spin: { code: 'while True:\n    pass', expect: /^Error: the call took longer than 3 s$/ },
  allocate: { code: 'result = len([bytearray(2**20) for _ in range(4096)])', expect: /^Error: MemoryError/ },
  environment: { code: 'import os\nresult = dict(os.environ)', expect: /^\{\}$/ },
  passwd: {
    code: 'result = open("/etc/passwd").read()',
    expect: /^Error: FileNotFoundError: \[Errno 44\] No such file or directory: '\/etc\/passwd'/,
  },
  fill: {
    code:
      'with open("big.bin", "wb") as f:\n    for _ in range(1024):\n        f.write(b"x" * 2**20)\nresult = ' +
      '"wrote"',
    expect: /^Error: the plugin wrote more than 64 MiB to files$/,
  },
  shout: {
    code: 'for _ in range(100):\n    print("x" * 2**20)\nresult = "printed"',
    expect: /^Error: the plugin printed more than 1 MiB$/,
  },
  bridge: {
    code: 'import js\nresult = str(js.process.env)',
    expect: /^Error: ModuleNotFoundError: No module named 'js'/,
  },
  api: {
    code: 'import pyodide_js\nresult = str(pyodide_js)',
    expect: /^Error: ModuleNotFoundError: No module named 'pyodide_js'/,
  },
};

/** The cases run four at once, last: each of them alone fails with its reason, and the service holds. */
const TOGETHER = ['sparse', 'truncate', 'pipes', 'to_js'];

const indent = (code: string) => code.replace(/^/gm, '    ');
const MODULE = Object.entries(CASES)
  .map(([name, c]) => `def ${name}(args):\n    PORT = args["port"]\n${indent(c.code)}\n    return result\n`)
  .join('\n');

/** Processes below `root` in the process table, with their parent and command name. */
function descendants(root: number): { pid: number; ppid: number; comm: string }[] {
  const all = readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .flatMap((d) => {
      try {
        const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
        const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        return [{ pid: Number(d), ppid, comm }];
      } catch {
        return [];
      }
    });
  const found: typeof all = [];
  const below = new Set([root]);
  for (let grew = true; grew;) {
    grew = false;
    for (const p of all) {
      if (!below.has(p.ppid) || below.has(p.pid)) continue;
      below.add(p.pid);
      found.push(p);
      grew = true;
    }
  }
  return found;
}

/** What the launcher runs while it builds a process's boundary (isolation.ts), before it becomes the interpreter. */
const LAUNCHER = ['unshare', 'sh', 'mount', 'mkdir', 'touch', 'ln', 'pivot_root', 'umount', 'rmdir', 'setpriv'];

/** Processes the service's tree may hold: the sandbox's launchers and interpreters, none with a child of its own. */
function strayProcesses(service: number): string[] {
  const tree = descendants(service);
  const sandboxNode = new Set(tree.filter((p) => p.comm === 'node').map((p) => p.pid));
  return tree
    .filter((p) => ![...LAUNCHER, 'node'].includes(p.comm) || sandboxNode.has(p.ppid))
    .map((p) => `${p.comm} (${p.pid})`);
}

const residentMb = (pid: number) =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

describe('the hostile sandbox matrix', () => {
  let llm: MockLlm;
  let app: BundledApp;
  let listener: net.Server;
  let port = 0;
  let service = 0;
  let baseline = 0;
  const connections: string[] = [];
  const statusTimes: number[] = [];
  const strays = new Set<string>();
  let peakMb = 0;
  let probing: Promise<void> | undefined;
  const stopProbe = new AbortController();

  beforeAll(async () => {
    listener = net.createServer((socket) => {
      connections.push(String(socket.remoteAddress));
      socket.destroy();
    });
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    port = (listener.address() as net.AddressInfo).port;
    llm = await startMockLlm();
    app = await startBundledApp({
      ALLOW_PRIVATE_NETWORK: 'true',
      PLUGIN_TIMEOUT_SECONDS: '3',
      PLUGIN_MEMORY_MB: '64',
      SVC_SECRET_PROBE: 'must-not-leak',
    });
    service = app.process.child.pid as number;
    const plugins = Object.keys(CASES).map((name) => ({
      name,
      category: 'agent tool',
      entry_point: `hostile.plugins:${name}`,
      parameters: [{ name: 'port', type: 'int', default_value: 0 }],
    }));
    const bytes = await runnable('hostile', '1.0.0', plugins, {
      'hostile/__init__.py': '',
      'hostile/plugins.py': MODULE,
    });
    const uploaded = await uploadPackage(app, INSTANCE, 'Python-hostile', bytes, {
      type: 'plugin-package',
      name: 'Python-hostile',
      package_runtime: 'Python',
      package_version: '1.0.0',
    });
    expect(uploaded.status, JSON.stringify(uploaded.body)).toBe(200);
    await seedAgent(app, 'target', { llmUrl: llm.url });
    const tools = Object.keys(CASES).map((name) => name.replaceAll('_', '-'));
    for (const name of Object.keys(CASES))
      await upsert(app, 'Svc.Agent', 'tools', name.replaceAll('_', '-'), {
        tool_type: 'plugin',
        plugin_object_id: `/instances/${INSTANCE}/providers/Svc.Platform/plugins/Python-hostile-${name}`,
      });
    await upsert(app, 'Svc.Agent', 'tools', 'interpreter', { tool_type: 'code-interpreter' });
    await updateAgent(app, 'target', {
      tool_object_ids: [...tools, 'interpreter'].map((t) => objectId('Svc.Agent', 'tools', t)),
    });
    await grantReader(app, READER, 'target');
    // The service's first sandbox call makes its interpreter snapshot: done before the cases, and the baseline after
    // it.
    expect((await call('interpreter', 'clean')).result).toBe('[3]');
    await new Promise((resolve) => setTimeout(resolve, 2000));
    baseline = residentMb(service);
    probing = (async () => {
      while (!stopProbe.signal.aborted) {
        const started = performance.now();
        await (await fetch(`${app.core}/status`)).arrayBuffer();
        statusTimes.push(performance.now() - started);
        peakMb = Math.max(peakMb, residentMb(service));
        for (const stray of strayProcesses(service)) strays.add(stray);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
  }, 180_000);

  afterAll(async () => {
    stopProbe.abort();
    await probing;
    await app.stop();
    await llm.close();
    listener.close();
    rmSync(MARKER, { force: true });
  });

  /** What the model got back for one call of case `name`, as the code interpreter's code or as the plugin. */
  async function call(as: 'interpreter' | 'plugin', name: string) {
    const c = CASES[name] as { code: string };
    const code = `PORT = ${port}\n${c.code}\nprint(result, end='')`;
    // The call is scripted in the prompt (the mock model's /call), so calls made at once each get their own.
    const script = as === 'interpreter' ? `/call python\n${code}` : `/call ${name} ${JSON.stringify({ port })}`;
    const r = await complete(app, 'target', `run ${name}\n${script}`, {}, READER);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return { result: r.body.completion.replace(/^Tools said: /, '') };
  }

  for (const as of ['interpreter', 'plugin'] as const) {
    for (const [name, c] of Object.entries(CASES)) {
      it(`${as} ${name}: fails its own call with its reason, and runs nothing on the host`, async () => {
        const { result } = await call(as, name);
        expect(result).toMatch(c.expect);
        expect(result).not.toContain('must-not-leak');
        expect(existsSync(MARKER)).toBe(false);
        expect([...strays]).toEqual([]);
      }, 60_000);
    }
    it(`${as}: four hostile calls at once each fail alone`, async () => {
      // The mock model answers concurrent requests in the order they reach it: each reason must be among the results.
      const results = (await Promise.all(TOGETHER.map((name) => call(as, name)))).map((r) => r.result);
      for (const name of TOGETHER) {
        const at = results.findIndex((r) => (CASES[name] as { expect: RegExp }).expect.test(r));
        expect(at, `${name} among ${JSON.stringify(results)}`).toBeGreaterThanOrEqual(0);
        results.splice(at, 1);
      }
      expect((await call(as, 'clean')).result).toBe('[3]');
    }, 120_000);
  }

  it('let no connection reach the loopback listener, left no process behind, held its memory and status', async () => {
    expect(connections).toEqual([]);
    expect([...strays]).toEqual([]);
    // Once the calls are over, the tree holds at most the warm interpreters (a launcher and a Node process each).
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const left = descendants(service).filter((p) => p.comm === 'node');
    expect(left.length).toBeLessThanOrEqual(2);
    const sorted = [...statusTimes].sort((a, b) => a - b);
    const p99 = sorted[Math.floor(sorted.length * 0.99)] ?? 0;
    process.stdout.write(
      `sandbox matrix: ${statusTimes.length} GET /status, p99 ${p99.toFixed(1)} ms, max ` +
        `${sorted.at(-1)?.toFixed(1)} ms; service RSS ${baseline.toFixed(0)} MB, peak ${peakMb.toFixed(0)} MB ` +
        `(+${(peakMb - baseline).toFixed(0)})\n`,
    );
    expect(peakMb - baseline).toBeLessThanOrEqual(100);
    // A stall bound: the figure itself is the benchmark's (npm run bench -- sandbox).
    expect(p99).toBeLessThan(1000);
  });
});
