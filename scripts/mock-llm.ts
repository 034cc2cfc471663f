// An OpenAI-compatible Chat Completions server on loopback that echoes the last user message: for trying
// the platform without a model (`npm run mock-llm`), for the tests and for the benchmarks. It speaks the
// OpenAI path (/v1/chat/completions) and the Azure OpenAI one (/openai/deployments/{d}/chat/completions),
// and can play a hostile upstream: hang, reset, trickle, cut off, answer garbage or an endless body.
// Its embeddings (/embeddings) are bags of words (a dense pseudo-random direction per word, summed): texts
// that share words are similar, equal texts identical, which is what retrieval and cache tests need.
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { readFile } from 'node:fs/promises';
import { extname, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { attachMockRealtime, type MockRealtime } from './mock-realtime.js';
import { parseArgs } from 'node:util';

export interface ChatRequest {
  path: string;
  /** Path and query string. */
  url: string;
  headers: http.IncomingHttpHeaders;
  body: {
    model?: string;
    messages: { role: string; content: MessageContent; tool_calls?: unknown[]; tool_call_id?: string }[];
    tools?: { function: { name: string } }[];
    [k: string]: unknown;
  };
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
  | { hugeBytes: number }
  /** A 200 asking for these function calls (arguments as objects; ids call_1, call_2, ...). */
  | { toolCalls: { name: string; arguments: Record<string, unknown> }[] };

export interface EmbeddingRequest {
  path: string;
  body: { model?: string; input: string | string[]; dimensions?: number };
}

export interface MockLlm {
  url: string;
  /** The Realtime socket (`/v1/realtime`): its calls, what it hears, and a way to drop them. */
  realtime: MockRealtime;
  requests: ChatRequest[];
  /** Calls of the embeddings API. */
  embeddingRequests: EmbeddingRequest[];
  /** Queue behaviors for the next embeddings calls, in order. */
  nextEmbedding(...behaviors: Behavior[]): void;
  /** Calls whose client went away before the answer was complete (an aborted call). */
  readonly aborted: number;
  /** Connections clients opened to the mock. */
  readonly connections: number;
  /** When (performance.now()) each streamed answer's first token was written. */
  readonly firstTokens: number[];
  /**
   * How a streamed answer (`stream: true`) flows: the first token after `firstTokenMs`, the rest spread over
   * `spreadMs`.
   */
  setStreaming(firstTokenMs: number, spreadMs: number): void;
  /** Queue behaviors for the next requests, in order. */
  next(...behaviors: Behavior[]): void;
  /** Drops behaviors queued and not yet used. */
  clear(): void;
  /** While set: a request that offers this function and ends with the user's message is answered with a call of it. */
  setToolReflex(reflex: { name: string; arguments: Record<string, unknown> } | undefined): void;
  setLatency(ms: number): void;
  close(): Promise<void>;
}

/** A message's content: text, or parts (text and images) as OpenAI's vision requests send them. */
type MessageContent =
  string | null | ({ type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } })[];

/** The content as text: parts joined, each image as `[image <type>, <bytes> bytes]`. */
export function textOf(content: MessageContent): string {
  if (content === null || typeof content === 'string') return content ?? '';
  return content
    .map((p) => {
      if (p.type === 'text') return p.text;
      const m = /^data:([^;]+);base64,(.*)$/.exec(p.image_url.url);
      return m ? `[image ${m[1]}, ${Buffer.from(m[2] ?? '', 'base64').length} bytes]` : `[image ${p.image_url.url}]`;
    })
    .join(' ');
}

const words = (content: MessageContent) => textOf(content).split(/\s+/).filter(Boolean).length;

/**
 * A tool call the user's message asks for: a line `/call NAME {json arguments}`, or `/call python` followed
 * by lines of code (the code interpreter), when NAME is among the offered functions.
 */
export function scriptedCall(
  message: string,
  tools: readonly { function: { name: string } }[],
): { name: string; arguments: Record<string, unknown> } | undefined {
  const at = message.search(/^\/call /m);
  const m = at < 0 ? null : /^\/call ([A-Za-z0-9_-]{1,64})[ \t]*(.*)$/s.exec(message.slice(at));
  if (!m) return undefined;
  const [, name = '', rest = ''] = m;
  if (!tools.some((t) => t.function.name === name)) return undefined;
  const [first = '', ...lines] = rest.split('\n');
  if (name === 'python' && first.trim() === '') return { name, arguments: { code: lines.join('\n') } };
  try {
    const args: unknown = JSON.parse(rest.trim() || '{}');
    return typeof args === 'object' && args !== null && !Array.isArray(args)
      ? { name, arguments: args as Record<string, unknown> }
      : undefined;
  } catch {
    return undefined;
  }
}

/** The echo of the last user message; after tool results, what the tools said. */
function reply(body: ChatRequest['body']) {
  const lastUser = body.messages.map((m) => m.role).lastIndexOf('user');
  const results = body.messages.slice(lastUser + 1).filter((m) => m.role === 'tool');
  const content =
    results.length > 0
      ? `Tools said: ${results.map((m) => textOf(m.content)).join(' | ')}`
      : `Echo: ${textOf(body.messages[lastUser]?.content ?? null)}`;
  return {
    content,
    prompt: body.messages.reduce((total, m) => total + words(m.content), 0),
    completion: words(content),
  };
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

/** The default length of the mock's embeddings. */
export const MOCK_EMBEDDING_DIMENSIONS = 256;

/** FNV-1a: a stable hash of a word. */
function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** A word's direction: a dense pseudo-random ±1 vector seeded by the word (mulberry32), kept for reuse. */
const wordVectors = new Map<string, Float32Array>();
function wordVector(word: string, dims: number): Float32Array {
  const key = `${dims}:${word}`;
  let v = wordVectors.get(key);
  if (!v) {
    let seed = fnv1a(word);
    v = new Float32Array(dims);
    for (let i = 0; i < dims; i++) {
      seed = (seed + 0x6d2b79f5) >>> 0;
      let t = Math.imul(seed ^ (seed >>> 15), seed | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      v[i] = ((t ^ (t >>> 14)) >>> 0) & 1 ? 1 : -1;
    }
    if (wordVectors.size > 100_000) wordVectors.clear();
    wordVectors.set(key, v);
  }
  return v;
}

/**
 * A text's embedding: the sum of its words' directions, normalised to unit length. Like a real model's it is
 * dense; texts sharing words point alike (random directions are nearly orthogonal), equal texts the same way.
 */
export function mockEmbedding(text: string, dims = MOCK_EMBEDDING_DIMENSIONS): number[] {
  const sum = new Float64Array(dims);
  for (const word of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
    const w = wordVector(word, dims);
    w.forEach((x, i) => (sum[i] = (sum[i] ?? 0) + x));
  }
  const norm = Math.sqrt(sum.reduce((n, x) => n + x * x, 0));
  if (norm === 0) return Array.from({ length: dims }, (_, i) => (i === 0 ? 1 : 0));
  return Array.from(sum, (x) => x / norm);
}

function embeddingsAnswer(body: EmbeddingRequest['body']): string {
  const inputs = Array.isArray(body.input) ? body.input : [body.input];
  const tokens = inputs.reduce((n, t) => n + words(t), 0);
  return JSON.stringify({
    object: 'list',
    data: inputs.map((text, index) => ({
      object: 'embedding',
      index,
      embedding: mockEmbedding(text, body.dimensions ?? MOCK_EMBEDDING_DIMENSIONS),
    })),
    model: body.model ?? 'mock-embedding',
    usage: { prompt_tokens: tokens, total_tokens: tokens },
  });
}

const FILE_TYPES: Record<string, string> = {
  '.md': 'text/markdown',
  '.txt': 'text/plain',
  '.html': 'text/html',
  '.pdf': 'application/pdf',
};

/** A file of the served folder (a local Web source for knowledge pipelines); nothing outside it. */
function serveFile(root: string, name: string, res: http.ServerResponse): void {
  const base = resolve(root);
  const file = resolve(base, decodeURIComponent(name));
  if (!file.startsWith(`${base}${sep}`)) return void res.writeHead(404).end();
  readFile(file).then(
    (bytes) =>
      res.writeHead(200, { 'content-type': FILE_TYPES[extname(file)] ?? 'application/octet-stream' }).end(bytes),
    () => res.writeHead(404).end(),
  );
}

export async function startMockLlm(
  options: { port?: number; latencyMs?: number; files?: string } = {},
): Promise<MockLlm> {
  const requests: ChatRequest[] = [];
  const embeddingRequests: EmbeddingRequest[] = [];
  const queue: Behavior[] = [];
  const embeddingQueue: Behavior[] = [];
  let reflex: { name: string; arguments: Record<string, unknown> } | undefined;
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
    const chunk = (payload: object) => {
      const created = Math.floor(Date.now() / 1000);
      const data = { id: `chatcmpl-${n}`, object: 'chat.completion.chunk', created, model: body.model ?? 'mock' };
      res.write(`data: ${JSON.stringify({ ...data, ...payload })}\n\n`);
    };
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const gap = pieces.length > 1 ? streaming.spreadMs / (pieces.length - 1) : 0;
    const send = (i: number) => {
      if (res.destroyed) return;
      chunk({
        choices: [
          { index: 0, delta: { ...(i === 0 ? { role: 'assistant' } : {}), content: pieces[i] }, finish_reason: null },
        ],
      });
      if (i === 0) firstTokens.push(performance.now());
      if (i + 1 < pieces.length) {
        later(gap, () => send(i + 1));
        return;
      }
      chunk({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
      chunk({
        choices: [],
        usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
      });
      res.end('data: [DONE]\n\n');
    };
    later(streaming.firstTokenMs, () => send(0));
  }

  function play(behavior: Behavior | undefined, res: http.ServerResponse, socket: Socket, answer: () => void) {
    if (!behavior) return latency > 0 ? later(latency, answer) : answer();
    if ('hangMs' in behavior) return later(behavior.hangMs, answer);
    if ('status' in behavior && !('raw' in behavior)) {
      res
        .writeHead(behavior.status, { 'content-type': 'application/json', ...behavior.headers })
        .end(JSON.stringify(behavior.body ?? { error: { message: `mock ${behavior.status}` } }));
      return;
    }
    if ('raw' in behavior) {
      res
        .writeHead(behavior.status ?? 200, { 'content-type': behavior.contentType ?? 'application/json' })
        .end(behavior.raw);
      return;
    }
    if ('reset' in behavior) return void socket.destroy();
    if ('toolCalls' in behavior) {
      const message = {
        role: 'assistant',
        content: null,
        tool_calls: behavior.toolCalls.map((c, i) => ({
          id: `call_${i + 1}`,
          type: 'function',
          function: { name: c.name, arguments: JSON.stringify(c.arguments) },
        })),
      };
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: 'chatcmpl-tools',
          object: 'chat.completion',
          choices: [{ index: 0, message, finish_reason: 'tool_calls' }],
          usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
        }),
      );
      return;
    }
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
      if (req.method === 'GET' && options.files !== undefined && path.startsWith('/files/'))
        return serveFile(options.files, path.slice('/files/'.length), res);
      if (req.method === 'POST' && /\/embeddings$/.test(path)) {
        let body: EmbeddingRequest['body'];
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as EmbeddingRequest['body'];
        } catch {
          res.writeHead(400).end();
          return;
        }
        embeddingRequests.push({ path, body });
        // Embeddings answer at once (the chat latency is not theirs) unless a behavior says otherwise.
        const answer = () => {
          if (!res.destroyed) res.writeHead(200, { 'content-type': 'application/json' }).end(embeddingsAnswer(body));
        };
        const behavior = embeddingQueue.shift();
        if (behavior) play(behavior, res, req.socket, answer);
        else answer();
        return;
      }
      if (req.method !== 'POST' || !/\/chat\/completions$/.test(path)) {
        res
          .writeHead(404, { 'content-type': 'application/json' })
          .end(JSON.stringify({ error: { message: 'not found' } }));
        return;
      }
      let body: ChatRequest['body'];
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as ChatRequest['body'];
      } catch {
        res.writeHead(400).end();
        return;
      }
      requests.push({ path, url: req.url ?? '', headers: req.headers, body });
      const n = requests.length;
      res.on('close', () => {
        if (!res.writableFinished) aborted++;
      });
      const lastIsUser = body.messages.at(-1)?.role === 'user';
      const scripted = lastIsUser
        ? scriptedCall(textOf(body.messages.at(-1)?.content ?? null), body.tools ?? [])
        : undefined;
      const reflexed =
        reflex && body.tools?.some((t) => t.function.name === reflex?.name) && lastIsUser
          ? { toolCalls: [reflex] }
          : undefined;
      const behavior = queue.shift() ?? (scripted ? { toolCalls: [scripted] } : reflexed);
      const answer = () => {
        if (res.destroyed) return;
        if (body.stream === true) stream(body, res, n);
        else res.writeHead(200, { 'content-type': 'application/json' }).end(echo(body, path, n));
      };
      // A reflexive tool call takes the model's time, as an answer would.
      if (behavior === reflexed && reflexed && latency > 0)
        later(latency, () => play(reflexed, res, req.socket, answer));
      else play(behavior, res, req.socket, answer);
    });
  });
  server.keepAliveTimeout = 65_000;
  const realtime = attachMockRealtime(server);
  let connections = 0;
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    realtime,
    requests,
    embeddingRequests,
    nextEmbedding: (...behaviors) => embeddingQueue.push(...behaviors),
    get aborted() {
      return aborted;
    },
    get connections() {
      return connections;
    },
    firstTokens,
    setStreaming: (firstTokenMs, spreadMs) => (streaming = { firstTokenMs, spreadMs }),
    next: (...behaviors) => queue.push(...behaviors),
    clear: () => {
      queue.splice(0);
      embeddingQueue.splice(0);
    },
    setToolReflex: (r) => (reflex = r),
    setLatency: (ms) => (latency = ms),
    close: () =>
      new Promise<void>((resolve) => {
        for (const t of timers) clearTimeout(t);
        timers.clear();
        realtime.close();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

const USAGE = `npm run mock-llm -- [port] [options]   (default port 8080)

An OpenAI-compatible model on 127.0.0.1 that answers with the last user message: chat completions (also
streamed), embeddings and tool calls, for trying agents, memory and tools with no account; and a Realtime
socket at /v1/realtime that hears every committed audio buffer as "Hello from the microphone" and answers
"Echo: ..." with a short tone (for realtime speech).

  --latency-ms N        wait N ms before answering each call (default 0)
  --first-token-ms N    streamed answers: the first piece after N ms (default 0)
  --stream-ms N         streamed answers: the rest spread over N ms (default 0: all at once)
  --tool-call NAME[=JSON]
                        when a call offers the function NAME and the last message is the user's, call it
                        once with JSON as its arguments (default {}); the answer after the tool result is
                        the echo. Offered names are <tool>__<function>, e.g. memory__append_memory

A message can ask for a tool call itself: a line "/call NAME {json arguments}" calls the offered function
NAME (a plugin tool by its short name, e.g. /call lookup {"order_id": "A-17"}), and "/call python"
followed by lines of code runs them in the code interpreter. The answer after the results says what the
tools said.
  --files DIR           also serve the files of DIR at /files/ (a local Web source for knowledge pipelines)
`;

/** Starts the mock model as a command, with the options of USAGE. */
async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      'latency-ms': { type: 'string' },
      'first-token-ms': { type: 'string' },
      'stream-ms': { type: 'string' },
      'tool-call': { type: 'string' },
      files: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return void process.stdout.write(USAGE);
  const number = (flag: string, value: string | undefined) => {
    const n = Number(value ?? 0);
    if (!Number.isInteger(n) || n < 0) throw new Error(`--${flag} must be a whole number of milliseconds`);
    return n;
  };
  const port = Number(positionals[0] ?? 8080);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error('the port must be a number from 0 to 65535');
  const mock = await startMockLlm({
    port,
    latencyMs: number('latency-ms', values['latency-ms']),
    ...(values.files !== undefined ? { files: values.files } : {}),
  });
  mock.setStreaming(number('first-token-ms', values['first-token-ms']), number('stream-ms', values['stream-ms']));
  if (values['tool-call'] !== undefined) {
    const [name = '', args] = values['tool-call'].split(/=(.*)/s);
    const parsed: unknown = JSON.parse(args ?? '{}');
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
      throw new Error('--tool-call arguments must be a JSON object');
    mock.setToolReflex({ name, arguments: Object.fromEntries(Object.entries(parsed)) });
  }
  const served = values.files !== undefined ? `; ${values.files} at ${mock.url}/files/` : '';
  process.stdout.write(
    `Mock OpenAI-compatible server: ${mock.url}/v1 (echoes the last user message; ` +
      `embeddings at ${mock.url}/v1/embeddings)${served}\n`,
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().catch((e: unknown) => {
    process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n\n${USAGE}`);
    process.exit(1);
  });
}
