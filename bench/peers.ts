// `npm run bench -- peers`: this service beside a stateless gateway, the Portkey AI gateway (a development
// dependency, run from node_modules: nothing is installed at run time), against one mock model on loopback
// in the same run. Each system is its own process (this service as `npm start` runs it, from the bundle), so its
// CPU time (from /proc) and memory are its own.
// c=1: requests to every system interleaved on keep-alive connections, timed to the microsecond; c=32:
// round-robin slices of BENCH_PEER_SLICE_SECONDS (2) per system, BENCH_PEER_ROUNDS (3) rounds.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { LOCAL_DEFAULT_USER, loadLocalKey, mintLocalToken } from '../shared/auth/local-idp.js';
import { loadConfig } from '../shared/config.js';
import { startMockLlm } from '../scripts/mock-llm.js';
import { freePort } from '../scripts/azurite.js';
import { seed } from './completions.js';
import { load, timed, type Request } from './load.js';

export const PORTKEY = 'node_modules/@portkey-ai/gateway/build/start-server.js';
const BUNDLE = 'dist/bundle/start.js';
/** Linux's clock ticks per second for /proc times (CLK_TCK, 100 on every common kernel). */
const TICKS = 100;

interface System {
  name: string;
  request: Request;
  pid?: number;
}

export interface PeerRow {
  system: string;
  added: { p50: number; p99: number };
  rps: number;
  cpuMsPerRequest: number | undefined;
  rssMiB: number | undefined;
}

export const cpuMs = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS;
};
export const rssMiB = (pid: number) =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

/** Resident MiB of the mappings of files under `folder` (the memory-mapped store) and of the node binary. */
function mappedMiB(pid: number, folder: string): { store: number; node: number } {
  const out = { store: 0, node: 0 };
  let target: 'store' | 'node' | undefined;
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const mapping = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s+(.*)$/.exec(line);
    if (mapping)
      target = mapping[1]?.startsWith(folder) ? 'store' : mapping[1] === process.execPath ? 'node' : undefined;
    else if (target && line.startsWith('Rss:')) out[target] += Number(line.split(/\s+/)[1]) / 1024;
  }
  return { store: Math.round(out.store * 10) / 10, node: Math.round(out.node) };
}

/** Starts a child and resolves with its first stdout line matching `ready`. */
export function child(
  command: string,
  args: string[],
  env: Record<string, string>,
  ready: RegExp,
): Promise<{ process: ChildProcess; line: string }> {
  const proc = spawn(command, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const line = out.split('\n').find((l) => ready.test(l));
      if (line) resolve({ process: proc, line });
    });
    proc.once('exit', (code) => reject(new Error(`${command} ${args.join(' ')} exited with ${code}`)));
  });
}

/**
 * The service as `npm start` runs it (the bundle, its own Azurite, queue workers) on the embedded store in a
 * fresh folder; resolves once `GET /status` answers, with a token from the local identity provider.
 */
export async function startService(): Promise<{
  process: ChildProcess;
  core: string;
  management: string;
  instanceId: string;
  token: string;
  dataDir: string;
}> {
  if (!existsSync(BUNDLE)) throw new Error('Run `npm run build` first: the peers section starts the built service');
  const [core, management] = [await freePort(), await freePort()];
  const env = {
    DATA_DIR: mkdtempSync(path.join(tmpdir(), 'bench-peer-')),
    CORE_PORT: String(core),
    MANAGEMENT_PORT: String(management),
    ALLOW_PRIVATE_NETWORK: 'true',
    LOG_LEVEL: 'warn',
  };
  const proc = spawn(process.execPath, [BUNDLE], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const urls = { core: `http://127.0.0.1:${core}`, management: `http://127.0.0.1:${management}` };
  for (const deadline = Date.now() + 30_000; ;) {
    if (
      (await fetch(`${urls.core}/status`).then(
        (r) => r.status,
        () => 0,
      )) === 200
    )
      break;
    if (Date.now() > deadline || proc.exitCode !== null) throw new Error('The service did not start');
    await new Promise((r) => setTimeout(r, 20));
  }
  const config = loadConfig({ ...process.env, ...env });
  if (config.auth.kind !== 'local') throw new Error('the bench uses the local identity provider');
  const key = await loadLocalKey(config.auth.keyFile);
  const token = await mintLocalToken(key, config.auth.issuer, config.auth.audience, {
    upn: LOCAL_DEFAULT_USER.upn,
    oid: LOCAL_DEFAULT_USER.oid,
    expiresInSeconds: 86_400,
  });
  return { process: proc, ...urls, instanceId: config.instanceId, token, dataDir: env.DATA_DIR };
}

/** Interleaves one request to each system, `count` times, each system on its own keep-alive connection. */
async function interleaved(systems: System[], count: number): Promise<number[][]> {
  const agents = systems.map(() => new http.Agent({ keepAlive: true, maxSockets: 1 }));
  const times = systems.map(() => [] as number[]);
  for (let i = 0; i < count; i++) {
    for (const [j, s] of systems.entries()) times[j]?.push(await timed(s.request, agents[j]!));
  }
  agents.forEach((a) => a.destroy());
  return times;
}

const pct = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p))] ?? 0;
const round = (n: number, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits;

export async function benchPeers(): Promise<{
  rows: PeerRow[];
  portkey: boolean;
  modelLatencyMs: number;
  nodeHttpRps: number;
  mapped: { store: number; node: number };
}> {
  const modelLatencyMs = Number(process.env.BENCH_MODEL_LATENCY_MS ?? 0);
  const count = Number(process.env.BENCH_PEER_REQUESTS ?? 2000);
  const sliceSeconds = Number(process.env.BENCH_PEER_SLICE_SECONDS ?? 2);
  const rounds = Number(process.env.BENCH_PEER_ROUNDS ?? 3);
  const llm = await startMockLlm({ latencyMs: modelLatencyMs });
  const children: ChildProcess[] = [];
  try {
    const json = { 'content-type': 'application/json' };
    const chat = JSON.stringify({
      model: 'bench',
      messages: [
        { role: 'system', content: 'You are a benchmark.' },
        { role: 'user', content: 'How fast is this?' },
      ],
    });
    const systems: System[] = [
      {
        name: 'model directly',
        request: { url: `${llm.url}/v1/chat/completions`, method: 'POST', headers: json, body: chat },
      },
    ];

    const portkey = existsSync(PORTKEY);
    if (portkey) {
      const port = await freePort();
      const started = await child(
        process.execPath,
        [PORTKEY, `--port=${port}`, '--headless'],
        { NODE_ENV: 'production' },
        /Ready for connections/,
      );
      children.push(started.process);
      const headers = {
        ...json,
        authorization: 'Bearer sk-bench',
        'x-portkey-provider': 'openai',
        'x-portkey-custom-host': `${llm.url}/v1`,
      };
      systems.push({
        name: 'Portkey gateway 1.15.2',
        request: { url: `http://127.0.0.1:${port}/v1/chat/completions`, method: 'POST', headers, body: chat },
        pid: started.process.pid!,
      });
    }

    const service = await startService();
    children.push(service.process);
    const app = service;
    const auth = { authorization: `Bearer ${app.token}` };
    await seed({ management: app.management, instanceId: app.instanceId, auth }, llm.url);
    const sessionRes = await fetch(`${app.core}/instances/${app.instanceId}/sessions`, {
      method: 'POST',
      headers: { ...auth, ...json },
      body: '{"name":"bench"}',
    });
    const session = (await sessionRes.json()) as { id: string };
    const completions = `${app.core}/instances/${app.instanceId}/completions`;
    const pid = service.process.pid!;
    systems.push(
      {
        name: 'this service, no session',
        request: {
          url: completions,
          method: 'POST',
          headers: { ...auth, ...json },
          body: JSON.stringify({ user_prompt: 'How fast is this?', agent_name: 'bench' }),
        },
        pid,
      },
      {
        name: 'this service, with a session',
        request: {
          url: completions,
          method: 'POST',
          headers: { ...auth, ...json },
          body: JSON.stringify({ user_prompt: 'How fast is this?', agent_name: 'bench', session_id: session.id }),
        },
        pid,
      },
    );

    // Warm every path (JIT, pools) before measuring.
    for (const s of systems)
      await load('warm-up', s.request.url, {
        seconds: 1,
        connections: 8,
        method: 'POST',
        headers: s.request.headers ?? {},
        body: s.request.body ?? '',
      });

    const times = await interleaved(systems, count);
    const direct = times[0] ?? [];
    const served = systems.map(() => ({ requests: 0, seconds: 0, cpuMs: 0 }));
    for (let r = 0; r < rounds; r++) {
      for (const [i, s] of systems.entries()) {
        const cpu0 = s.pid ? cpuMs(s.pid) : 0;
        const t0 = performance.now();
        const result = await load(s.name, s.request.url, {
          seconds: sliceSeconds,
          connections: 32,
          method: 'POST',
          headers: s.request.headers ?? {},
          body: s.request.body ?? '',
        });
        const elapsed = (performance.now() - t0) / 1000;
        const entry = served[i]!;
        entry.requests += result.rps * sliceSeconds;
        entry.seconds += Math.min(elapsed, sliceSeconds);
        entry.cpuMs += s.pid ? cpuMs(s.pid) - cpu0 : 0;
      }
    }
    const rows = systems.map((s, i) => {
      const t = times[i] ?? [];
      const entry = served[i]!;
      return {
        system: s.name,
        added: { p50: round(pct(t, 0.5) - pct(direct, 0.5)), p99: round(pct(t, 0.99) - pct(direct, 0.99)) },
        rps: Math.round(entry.requests / entry.seconds),
        cpuMsPerRequest: s.pid ? round(entry.cpuMs / entry.requests) : undefined,
        rssMiB: s.pid ? Math.round(rssMiB(s.pid)) : undefined,
      };
    });
    const echo = http.createServer((_req, res) => res.end('{"ok":true}'));
    await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
    const address = echo.address() as { port: number };
    const nodeHttp = await load('node:http', `http://127.0.0.1:${address.port}/`, {
      seconds: sliceSeconds,
      connections: 32,
    });
    echo.close();
    return {
      rows,
      portkey,
      modelLatencyMs,
      nodeHttpRps: Math.round(nodeHttp.rps),
      mapped: mappedMiB(pid, service.dataDir),
    };
  } finally {
    for (const c of children) c.kill('SIGTERM');
    await llm.close();
  }
}
