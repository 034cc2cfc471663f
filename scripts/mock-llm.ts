// An OpenAI-compatible Chat Completions server on loopback that echoes the last user message: for trying
// the platform without a model (`npm run mock-llm`), for the tests and for the benchmarks. It speaks the
// OpenAI path (/v1/chat/completions) and the Azure OpenAI one (/openai/deployments/{d}/chat/completions).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';

export interface ChatRequest {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: { model?: string; messages: { role: string; content: string }[]; [k: string]: unknown };
}

/** What the next request gets instead of an echo. */
export type Behavior = { status: number; headers?: Record<string, string>; body?: unknown } | { hangMs: number };

export interface MockLlm {
  url: string;
  requests: ChatRequest[];
  /** Queue behaviors for the next requests, in order. */
  next(...behaviors: Behavior[]): void;
  setLatency(ms: number): void;
  close(): Promise<void>;
}

const words = (text: string) => text.split(/\s+/).filter(Boolean).length;

export async function startMockLlm(options: { port?: number; latencyMs?: number } = {}): Promise<MockLlm> {
  const requests: ChatRequest[] = [];
  const queue: Behavior[] = [];
  let latency = options.latencyMs ?? 0;
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
      const behavior = queue.shift();
      const answer = () => {
        if (behavior && 'status' in behavior) {
          res.writeHead(behavior.status, { 'content-type': 'application/json', ...behavior.headers }).end(JSON.stringify(behavior.body ?? { error: { message: `mock ${behavior.status}` } }));
          return;
        }
        const last = [...body.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
        const content = `Echo: ${last}`;
        const prompt = body.messages.reduce((n, m) => n + words(m.content), 0);
        const completion = words(content);
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            id: `chatcmpl-${requests.length}`,
            object: 'chat.completion',
            created: Math.floor(Date.now() / 1000),
            model: body.model ?? path.split('/')[3] ?? 'mock',
            choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
            usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
          }),
        );
      };
      const delay = behavior && 'hangMs' in behavior ? behavior.hangMs : latency;
      if (delay > 0) setTimeout(answer, delay);
      else answer();
    });
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    next: (...behaviors) => queue.push(...behaviors),
    setLatency: (ms) => (latency = ms),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const port = Number(process.argv[2] ?? 8080);
  void startMockLlm({ port }).then((m) => process.stdout.write(`Mock OpenAI-compatible server: ${m.url}/v1 (echoes the last user message)\n`));
}
