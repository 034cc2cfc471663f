// `npm run bench -- streams`: N streamed completions open at once, each streamed by the mock model in 100
// pieces over 30 s, straight to the mock, through the Portkey gateway and through this service (`npm start`'s
// bundle, its own process), for N = 500, 1,000 and 2,000 (BENCH_STREAM_COUNTS, BENCH_STREAM_SECONDS).
// Each piece carries the time the mock sent it, so the delay it reaches the client with is measured for
// every piece whatever the wire format; the systems' CPU (from /proc) per stream and peak RSS are their own.
import { type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { freePort } from '../scripts/azurite.js';
import { seed } from './completions.js';
import { child, cpuMs, PORTKEY, rssMiB, startService } from './peers.js';

const PIECES = 100;
/** Connections opened at once while ramping up: a listen backlog is finite. */
const RAMP_BATCH = 100;

export interface StreamRow {
  system: string;
  streams: number;
  completed: number;
  errors: number;
  /** Delay of each piece from the mock's send to the client, ms. */
  delay: { p50: number; p99: number };
  /**
   * The same while every stream is open and sending: from a second after the last stream's first piece (the
   * service sets up thousands of streams over seconds) until the first stream ends.
   */
  steady: { p50: number; p99: number };
  firstPiece: { p50: number; p99: number };
  cpuMsPerStream: number | undefined;
  peakRssMiB: number | undefined;
}

const now = () => performance.timeOrigin + performance.now();
const pct = (values: Float64Array | number[], p: number) => {
  const sorted = Float64Array.from(values).sort();
  return Math.round((sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0) * 100) / 100;
};

/** An OpenAI-compatible model that streams PIECES pieces over `seconds`, each piece the time it is sent, `@<ms>@`. */
async function streamingMock(seconds: number): Promise<{ url: string; close(): Promise<void> }> {
  const gap = (seconds * 1000) / (PIECES - 1);
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      const chunk = (body: unknown) => res.write(`data: ${JSON.stringify(body)}\n\n`);
      let sent = 0;
      let timer: NodeJS.Timeout | undefined;
      const send = () => {
        if (res.destroyed) return clearInterval(timer);
        chunk({
          id: 'bench',
          object: 'chat.completion.chunk',
          created: 0,
          model: 'bench',
          choices: [
            {
              index: 0,
              delta: { ...(sent === 0 ? { role: 'assistant' } : {}), content: `@${now().toFixed(3)}@ ` },
              finish_reason: null,
            },
          ],
        });
        if (++sent < PIECES) return;
        clearInterval(timer);
        chunk({
          id: 'bench',
          object: 'chat.completion.chunk',
          created: 0,
          model: 'bench',
          choices: [{ index: 0, delta: {}, finish_reason: 'stop' }],
          usage: { prompt_tokens: 10, completion_tokens: PIECES, total_tokens: 10 + PIECES },
        });
        res.end('data: [DONE]\n\n');
      };
      send();
      // Each answer keeps a phase of its own, as independent model calls do. Intervals started in the same
      // millisecond fire in the same turn of the loop: without this, the pieces of every hundred streams
      // opened together would reach the system in one burst, and the last of each burst would wait for the
      // other 99 in any single-threaded system and in this client alike.
      const phase = setTimeout(() => {
        if (res.destroyed) return;
        timer = setInterval(send, gap);
        send();
      }, Math.random() * gap);
      res.on('close', () => clearTimeout(phase));
    });
  });
  server.keepAliveTimeout = 60_000;
  server.maxConnections = 100_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', 4096, r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}

interface Target {
  name: string;
  url: string;
  headers: Record<string, string>;
  body: string;
  pid?: number;
  /**
   * Stops the system once its runs are done, resolving once it has exited: what it still does then would be measured
   * with the next.
   */
  stop?: () => Promise<void>;
}

/** Stops a child process and resolves once it has exited (killed outright past 10 s). */
function exited(process: ChildProcess): Promise<void> {
  if (process.exitCode !== null || process.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const force = setTimeout(() => process.kill('SIGKILL'), 10_000);
    process.once('exit', () => {
      clearTimeout(force);
      resolve();
    });
    process.kill('SIGTERM');
  });
}

/** The window in which every stream is open and sending (see StreamRow.steady), and the delays within it. */
interface Steady {
  streams: number;
  from: number;
  until: number;
  delays: number[];
}

/** One stream: every piece's delay, and whether all PIECES came and the stream ended well. */
function openStream(t: Target, delays: number[], firsts: number[], steady: Steady): Promise<boolean> {
  return new Promise((resolve) => {
    const req = http.request(
      t.url,
      { method: 'POST', headers: { ...t.headers, 'content-length': Buffer.byteLength(t.body) }, agent: false },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          return resolve(false);
        }
        let seen = 0;
        let buffer = '';
        res.setEncoding('utf8');
        res.on('data', (text: string) => {
          const at = now();
          buffer += text;
          const marker = /@(\d+\.\d+)@/g;
          let end = 0;
          // The pieces as they come; a closing event repeating the whole text (the Core API's `completed`) is not
          // counted again.
          for (let m = marker.exec(buffer); m && seen < PIECES; m = marker.exec(buffer)) {
            const delay = at - Number(m[1]);
            if (seen === 0 && firsts.push(delay) === steady.streams) steady.from = at + 1000;
            delays.push(delay);
            if (at >= steady.from && at < steady.until) steady.delays.push(delay);
            seen++;
            end = marker.lastIndex;
          }
          // A marker cut between two reads is completed by the next.
          buffer = seen >= PIECES ? '' : buffer.slice(end).slice(-256);
        });
        res.on('end', () => {
          steady.until = Math.min(steady.until, now());
          resolve(seen >= PIECES);
        });
        res.on('error', () => resolve(false));
      },
    );
    req.on('error', () => resolve(false));
    req.end(t.body);
  });
}

async function run(t: Target, streams: number): Promise<StreamRow> {
  const delays: number[] = [];
  const firsts: number[] = [];
  let peak = 0;
  const sample = t.pid ? setInterval(() => (peak = Math.max(peak, rssMiB(t.pid as number))), 250) : undefined;
  const cpu0 = t.pid ? cpuMs(t.pid) : 0;
  const results: Promise<boolean>[] = [];
  const steady: Steady = { streams, from: Infinity, until: Infinity, delays: [] };
  for (let i = 0; i < streams; i += RAMP_BATCH) {
    for (let j = i; j < Math.min(streams, i + RAMP_BATCH); j++) results.push(openStream(t, delays, firsts, steady));
    await new Promise((r) => setTimeout(r, 20));
  }
  const ok = await Promise.all(results);
  clearInterval(sample);
  const completed = ok.filter(Boolean).length;
  return {
    system: t.name,
    streams,
    completed,
    errors: streams - completed,
    delay: { p50: pct(delays, 0.5), p99: pct(delays, 0.99) },
    steady: { p50: pct(steady.delays, 0.5), p99: pct(steady.delays, 0.99) },
    firstPiece: { p50: pct(firsts, 0.5), p99: pct(firsts, 0.99) },
    cpuMsPerStream: t.pid ? Math.round(((cpuMs(t.pid) - cpu0) / streams) * 100) / 100 : undefined,
    peakRssMiB: t.pid ? Math.round(peak) : undefined,
  };
}

export async function benchStreams(): Promise<{ rows: StreamRow[]; seconds: number; idleRssMiB: number | undefined }> {
  const seconds = Number(process.env.BENCH_STREAM_SECONDS ?? 30);
  const counts = (process.env.BENCH_STREAM_COUNTS ?? '500,1000,2000').split(',').map(Number);
  const mock = await streamingMock(seconds);
  const children: ChildProcess[] = [];
  try {
    const chat = JSON.stringify({
      model: 'bench',
      stream: true,
      messages: [
        { role: 'system', content: 'You are a benchmark.' },
        { role: 'user', content: 'Tell me a long story.' },
      ],
    });
    const json = { 'content-type': 'application/json' };
    const targets: Target[] = [
      { name: 'model directly', url: `${mock.url}/v1/chat/completions`, headers: json, body: chat },
    ];
    if (existsSync(PORTKEY)) {
      const port = await freePort();
      const started = await child(
        process.execPath,
        [
          '--import',
          fileURLToPath(new URL('./portkey-fetch.mjs', import.meta.url)),
          PORTKEY,
          `--port=${port}`,
          '--headless',
        ],
        { NODE_ENV: 'production' },
        /Ready for connections/,
      );
      children.push(started.process);
      targets.push({
        name: 'Portkey gateway 1.15.2',
        url: `http://127.0.0.1:${port}/v1/chat/completions`,
        headers: {
          ...json,
          authorization: 'Bearer sk-bench',
          'x-portkey-provider': 'openai',
          'x-portkey-custom-host': `${mock.url}/v1`,
        },
        body: chat,
        pid: started.process.pid!,
        // Stopped after its runs: a system left running goes on using CPU during the next one's.
        stop: () => exited(started.process),
      });
    }
    const service = await startService();
    children.push(service.process);
    const auth = { authorization: `Bearer ${service.token}` };
    // Room for the largest count on the endpoint (its max_connections; the default is 1,024).
    await seed({ management: service.management, instanceId: service.instanceId, auth }, mock.url, {
      max_connections: Math.max(...counts) + 100,
    });
    const idleRssMiB = Math.round(rssMiB(service.process.pid!));
    targets.push({
      name: 'this service, no session',
      url: `${service.core}/instances/${service.instanceId}/completions`,
      headers: { ...json, ...auth, accept: 'text/event-stream' },
      body: JSON.stringify({ user_prompt: 'Tell me a long story.', agent_name: 'bench' }),
      pid: service.process.pid!,
    });
    const rows: StreamRow[] = [];
    // Each system's runs together, and the system stopped after them, so that none runs beside another's.
    for (const t of targets) {
      for (const streams of counts) rows.push(await run(t, streams));
      await t.stop?.();
    }
    return { rows, seconds, idleRssMiB };
  } finally {
    for (const c of children) c.kill('SIGTERM');
    await mock.close();
  }
}
