// A Model Context Protocol server for the tests and benchmarks, built with the official SDK and served over streamable
// HTTP (stateless: a server per request, as the SDK's examples do). Tools: add, slow (waits), repeat, fail (throws),
// and admin_reset, which agents must not reach unless allow-listed. It records the calls and their headers.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

export interface TestMcpServer {
  url: string;
  calls: { tool: string; args: unknown; authorization: string | undefined }[];
  /** How many slow calls run now, and the most that ran at once (a test may reset it). */
  slow: { running: number; peak: number };
  close(): Promise<void>;
}

export async function startMcpServer(): Promise<TestMcpServer> {
  const calls: TestMcpServer['calls'] = [];
  const slow = { running: 0, peak: 0 };
  const build = (authorization: string | undefined) => {
    const server = new McpServer({ name: 'test-tools', version: '1.0.0' });
    const record = (tool: string, args: unknown) => calls.push({ tool, args, authorization });
    server.registerTool(
      'add',
      { description: 'Adds two numbers', inputSchema: { a: z.number(), b: z.number() } },
      ({ a, b }) => {
        record('add', { a, b });
        return { content: [{ type: 'text', text: String(a + b) }] };
      },
    );
    server.registerTool(
      'slow',
      { description: 'Answers after a while', inputSchema: { ms: z.number() } },
      async ({ ms }) => {
        record('slow', { ms });
        slow.peak = Math.max(slow.peak, ++slow.running);
        await new Promise((r) => setTimeout(r, ms)).finally(() => slow.running--);
        return { content: [{ type: 'text', text: 'finally' }] };
      },
    );
    server.registerTool(
      'repeat',
      { description: 'Repeats a text', inputSchema: { text: z.string(), times: z.number().int() } },
      ({ text, times }) => {
        record('repeat', { text, times });
        return { content: [{ type: 'text', text: text.repeat(times) }] };
      },
    );
    server.registerTool('fail', { description: 'Always fails', inputSchema: {} }, () => {
      record('fail', {});
      throw new Error('the disk is full');
    });
    server.registerTool('admin_reset', { description: 'Resets everything', inputSchema: {} }, () => {
      record('admin_reset', {});
      return { content: [{ type: 'text', text: 'reset' }] };
    });
    return server;
  };
  const httpServer = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body: unknown = chunks.length > 0 ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
      const server = build(req.headers.authorization);
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      res.on('close', () => {
        void transport.close();
        void server.close();
      });
      server
        .connect(transport)
        .then(() => transport.handleRequest(req, res, body))
        .catch(() => res.headersSent || res.writeHead(500).end());
    });
  });
  await new Promise<void>((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(httpServer.address() as AddressInfo).port}/mcp`,
    calls,
    slow,
    close: () =>
      new Promise<void>((resolve) => {
        httpServer.closeAllConnections();
        httpServer.close(() => resolve());
      }),
  };
}
