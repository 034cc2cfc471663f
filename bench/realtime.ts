// The realtime relay's cost: calls that stream 20 ms audio frames to a model socket that answers each at
// once, through the relay and straight to the model in the same run. What the relay adds per round trip (a
// frame forwarded each way), and the memory each open call holds in the relay.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';
import { textOf } from '../shared/realtime/model-socket.js';
import type { BenchApp } from './app.js';

/** One 20 ms frame of 24 kHz 16-bit mono audio, as the Realtime API takes it (base64). */
const FRAME = Buffer.alloc(960).toString('base64');
const FRAME_MS = 20;

const percentile = (ms: number[], p: number) =>
  [...ms].sort((a, b) => a - b)[Math.min(ms.length - 1, Math.floor((ms.length * p) / 100))] ?? NaN;
const round = (n: number) => Math.round(n * 100) / 100;

/** A model socket that answers every appended frame at once with an event naming it. */
async function echoModel(): Promise<{ url: string; close(): void }> {
  const server = http.createServer((_req, res) => res.writeHead(404).end());
  const wss = new WebSocketServer({ server });
  wss.on('connection', (ws) => {
    ws.send(JSON.stringify({ type: 'session.created', session: {} }));
    ws.on('message', (data) => {
      const event = JSON.parse(textOf(data)) as { type: string; event_id?: string; session?: unknown };
      if (event.type === 'session.update') ws.send(JSON.stringify({ type: 'session.updated', session: event.session }));
      else if (event.type === 'input_audio_buffer.append')
        ws.send(JSON.stringify({ type: 'bench.heard', event_id: event.event_id }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      for (const c of wss.clients) c.terminate();
      server.close();
    },
  };
}

interface Call {
  ws: WebSocket;
  rtt: number[];
}

/** Opens a call and waits until its instructions were taken (through the relay) or the socket is open. */
async function open(url: string, protocols: string[] = []): Promise<Call> {
  const ws = new WebSocket(url, protocols);
  const call: Call = { ws, rtt: [] };
  const sent = new Map<string, number>();
  ws.on('message', (data) => {
    const event = JSON.parse(textOf(data)) as { type: string; event_id?: string };
    if (event.type !== 'bench.heard' || !event.event_id) return;
    const at = sent.get(event.event_id);
    if (at !== undefined) call.rtt.push(performance.now() - at);
    sent.delete(event.event_id);
  });
  (ws as WebSocket & { sent?: Map<string, number> }).sent = sent;
  await new Promise<void>((resolve, reject) => {
    ws.once('error', reject);
    ws.on('message', (data) => {
      if ((JSON.parse(textOf(data)) as { type: string }).type === 'session.updated') resolve();
    });
    ws.once('open', () => ws.send(JSON.stringify({ type: 'session.update', session: { voice: 'alloy' } })));
  });
  return call;
}

/** Streams frames on every call for `seconds`, one every 20 ms per call. */
async function stream(calls: Call[], seconds: number): Promise<number[]> {
  let n = 0;
  const timers = calls.map((c, i) => {
    const sent = (c.ws as WebSocket & { sent: Map<string, number> }).sent;
    return setInterval(() => {
      const id = `f${i}-${n++}`;
      sent.set(id, performance.now());
      c.ws.send(JSON.stringify({ type: 'input_audio_buffer.append', event_id: id, audio: FRAME }));
    }, FRAME_MS);
  });
  await new Promise((r) => setTimeout(r, seconds * 1000));
  timers.forEach(clearInterval);
  await new Promise((r) => setTimeout(r, 200));
  return calls.flatMap((c) => c.rtt);
}

/** Heap and buffers in use after a full collection, in bytes. */
function memory(): number {
  for (let i = 0; i < 3; i++) (globalThis as { gc?: () => void }).gc?.();
  const m = process.memoryUsage();
  return m.heapUsed + m.external;
}

export interface RealtimeBench {
  calls: number;
  frames: { direct: number; relay: number };
  direct: { p50: number; p99: number };
  relay: { p50: number; p99: number };
  added: { p50: number; p99: number };
  /** KiB each open call holds: through the relay, straight to the model, and what the relay adds. */
  memoryKiB: { direct: number; relay: number; added: number };
}

export async function benchRealtime(app: BenchApp, calls = 20, seconds = 5): Promise<RealtimeBench> {
  const model = await echoModel();
  const management = (path: string, body: Record<string, unknown>) =>
    fetch(`${app.management}/instances/${app.instanceId}/providers/${path}`, {
      method: 'POST',
      headers: { ...app.auth, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }).then(async (r) => {
      if (!r.ok) throw new Error(`${path}: ${r.status} ${await r.text()}`);
    });
  const id = (path: string) => `/instances/${app.instanceId}/providers/${path}`;
  await management('Svc.Configuration/apiEndpointConfigurations/bench-voice', {
    name: 'bench-voice',
    category: 'LLM',
    provider: 'openai',
    url: `${model.url}/v1`,
    authentication_type: 'None',
  });
  await management('Svc.AIModel/aiModels/bench-realtime', {
    name: 'bench-realtime',
    model_type: 'realtime',
    deployment_name: 'bench-realtime',
    api_endpoint_object_id: id('Svc.Configuration/apiEndpointConfigurations/bench-voice'),
  });
  await management('Svc.Agent/agents/bench-talker', {
    name: 'bench-talker',
    realtime_speech_settings: {
      enabled: true,
      realtime_speech_ai_model_object_id: id('Svc.AIModel/aiModels/bench-realtime'),
      stop_words: [],
    },
  });
  const token = (app.auth.authorization ?? '').replace(/^Bearer /, '');
  const relayUrl = async () => {
    const r = await fetch(`${app.core}/instances/${app.instanceId}/realtime-sessions`, {
      method: 'POST',
      headers: { ...app.auth, 'content-type': 'application/json' },
      body: JSON.stringify({ agent_name: 'bench-talker' }),
    });
    if (r.status !== 201) throw new Error(`realtime session: ${r.status} ${await r.text()}`);
    return ((await r.json()) as { websocket_url: string }).websocket_url;
  };

  // What a call holds: memory with the calls open after streaming, against the same once they closed.
  const run = async (connect: () => Promise<Call>) => {
    const open_ = await Promise.all(Array.from({ length: calls }, connect));
    const rtt = await stream(open_, seconds);
    const withCalls = memory();
    for (const c of open_) c.ws.close();
    await new Promise((r) => setTimeout(r, 500));
    const held = (withCalls - memory()) / calls / 1024;
    return { rtt, held };
  };
  // Warm both paths (JIT, the resource cache), then measure each.
  await run(() => open(`${model.url.replace('http', 'ws')}/v1/realtime?model=bench-realtime`));
  await run(async () => open(await relayUrl(), ['realtime', `bearer.${token}`]));
  const direct = await run(() => open(`${model.url.replace('http', 'ws')}/v1/realtime?model=bench-realtime`));
  const relay = await run(async () => open(await relayUrl(), ['realtime', `bearer.${token}`]));
  model.close();
  const d = { p50: round(percentile(direct.rtt, 50)), p99: round(percentile(direct.rtt, 99)) };
  const r = { p50: round(percentile(relay.rtt, 50)), p99: round(percentile(relay.rtt, 99)) };
  return {
    calls,
    frames: { direct: direct.rtt.length, relay: relay.rtt.length },
    direct: d,
    relay: r,
    added: { p50: round(r.p50 - d.p50), p99: round(r.p99 - d.p99) },
    memoryKiB: {
      direct: Math.round(direct.held),
      relay: Math.round(relay.held),
      added: Math.round(relay.held - direct.held),
    },
  };
}
