// An OpenAI-compatible Chat Completions server on loopback that echoes the last user message: for trying
// the platform without a model (`npm run mock-llm`), for the tests and for the benchmarks. It speaks the
// OpenAI path (/v1/chat/completions) and the Azure OpenAI one (/openai/deployments/{d}/chat/completions),
// and can play a hostile upstream: hang, reset, trickle, cut off, answer garbage or an endless body.
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

export interface ChatRequest {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: { model?: string; messages: { role: string; content: string }[]; [k: string]: unknown };
}

/** What the next request gets instead of an echo. */
export type Behavior =
  /** An error (or any) status with a JSON body. */
  | { status: number; headers?: Record<string, string>; body?: unknown }
  /** Wait, then echo as usual. */
  | { hangMs: number }
  /** These exact bytes as the body (garbage, HTML, `{}`), status 200 unless given. */
  | { raw: string; status?: number; contentType?: string }
  /** Close the connection without an answer. */
  | { reset: true }
  /** Headers promising a body, a part of it, then the connection closes. */
  | { cutAfterBytes: number }
  /** Headers at once, then the body a byte every `everyMs`. */
  | { trickleMs: number }
  /** A 200 whose body goes on for this many bytes. */
  | { hugeBytes: number };

export interface MockLlm {
  url: string;
  requests: ChatRequest[];
  /** Calls whose client went away before the answer was complete (an aborted call). */
  readonly aborted: number;
  /** When (performance.now()) each streamed answer's first token was written. */
  readonly firstTokens: number[];
  /** How a streamed answer (`stream: true`) flows: the first token after `firstTokenMs`, the rest spread over `spreadMs`. */
  setStreaming(firstTokenMs: number, spreadMs: number): void;
  /** Queue behaviors for the next requests, in order. */
  next(...behaviors: Behavior[]): void;
  /** Drops behaviors queued and not yet used. */
  clear(): void;
  setLatency(ms: number): void;
  close(): Promise<void>;
}

const words = (text: string) => text.split(/\s+/).filter(Boolean).length;

function reply(body: ChatRequest['body']) {
  const last = [...body.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
  const content = `Echo: ${last}`;
  return { content, prompt: body.messages.reduce((total, m) => total + words(m.content), 0), completion: words(content) };
}

function echo(body: ChatRequest['body'], path: string, n: number): string {
  const { content, prompt, completion } = reply(body);
  return JSON.stringify({
    id: `chatcmpl-${n}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: body.model ?? path.split('/')[3] ?? 'mock',
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
    usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
  });
}

export async function startMockLlm(options: { port?: number; latencyMs?: number } = {}): Promise<MockLlm> {
  const requests: ChatRequest[] = [];
  const queue: Behavior[] = [];
  const timers = new Set<NodeJS.Timeout>();
  const later = (ms: number, fn: () => void) => {
    const t = setTimeout(() => {
      timers.delete(t);
      fn();
    }, ms);
    timers.add(t);
  };
  let latency = options.latencyMs ?? 0;
  let streaming = { firstTokenMs: 0, spreadMs: 0 };
  let aborted = 0;
  const firstTokens: number[] = [];

  /** An OpenAI streamed answer: a chunk per word (with its leading space), usage, then [DONE]. */
  function stream(body: ChatRequest['body'], res: http.ServerResponse, n: number) {
    const { content, prompt, completion } = reply(body);
    const pieces = content.split(/(?= )/);
    const chunk = (payload: object) => res.write(`data: ${JSON.stringify({ id: `chatcmpl-${n}`, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model: body.model ?? 'mock', ...payload })}\n\n`);
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const gap = pieces.length > 1 ? streaming.spreadMs / (pieces.length - 1) : 0;
    const send = (i: number) => {
      if (res.destroyed) return;
      chunk({ choices: [{ index: 0, delta: { ...(i === 0 ? { role: 'assistant' } : {}), content: pieces[i] }, finish_reason: null }] });
      if (i === 0) firstTokens.push(performance.now());
      if (i + 1 < pieces.length) {
        later(gap, () => send(i + 1));
        return;
      }
      chunk({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
      chunk({ choices: [], usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion } });
      res.end('data: [DONE]\n\n');
    };
    later(streaming.firstTokenMs, () => send(0));
  }

  function play(behavior: Behavior | undefined, res: http.ServerResponse, socket: Socket, answer: () => void) {
    if (!behavior) return latency > 0 ? later(latency, answer) : answer();
    if ('hangMs' in behavior) return later(behavior.hangMs, answer);
    if ('status' in behavior && !('raw' in behavior)) {
      res.writeHead(behavior.status, { 'content-type': 'application/json', ...behavior.headers }).end(JSON.stringify(behavior.body ?? { error: { message: `mock ${behavior.status}` } }));
      return;
    }
    if ('raw' in behavior) {
      res.writeHead(behavior.status ?? 200, { 'content-type': behavior.contentType ?? 'application/json' }).end(behavior.raw);
      return;
    }
    if ('reset' in behavior) return void socket.destroy();
    if ('cutAfterBytes' in behavior) {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(behavior.cutAfterBytes * 10) });
      res.write('x'.repeat(behavior.cutAfterBytes));
      return later(20, () => socket.destroy());
    }
    if ('trickleMs' in behavior) {
      res.writeHead(200, { 'content-type': 'application/json' });
      const drip = () => {
        if (res.destroyed) return;
        res.write(' ');
        later(behavior.trickleMs, drip);
      };
      return drip();
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    let left = behavior.hugeBytes;
    const pump = () => {
      while (left > 0 && !res.destroyed) {
        left -= chunk.length;
        if (!res.write(chunk)) return void res.once('drain', pump);
      }
      res.end();
    };
    pump();
  }

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = (req.url ?? '').split('?')[0] ?? '';
      if (req.method !== 'POST' || !/\/chat\/completions$/.test(path)) {
        res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'not found' } }));
        return;
      }
      let body: ChatRequest['body'];
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as ChatRequest['body'];
      } catch {
        res.writeHead(400).end();
        return;
      }
      requests.push({ path, headers: req.headers, body });
      const n = requests.length;
      res.on('close', () => {
        if (!res.writableFinished) aborted++;
      });
      play(queue.shift(), res, req.socket, () => {
        if (res.destroyed) return;
        if (body.stream === true) stream(body, res, n);
        else res.writeHead(200, { 'content-type': 'application/json' }).end(echo(body, path, n));
      });
    });
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    get aborted() {
      return aborted;
    },
    firstTokens,
    setStreaming: (firstTokenMs, spreadMs) => (streaming = { firstTokenMs, spreadMs }),
    next: (...behaviors) => queue.push(...behaviors),
    clear: () => void queue.splice(0),
    setLatency: (ms) => (latency = ms),
    close: () =>
      new Promise<void>((resolve) => {
        for (const t of timers) clearTimeout(t);
        timers.clear();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const port = Number(process.argv[2] ?? 8080);
  void startMockLlm({ port }).then((m) => process.stdout.write(`Mock OpenAI-compatible server: ${m.url}/v1 (echoes the last user message)\n`));
}
