// The Node host writes a streamed answer's text pieces as HTTP/1.1 chunks straight to the socket (node-host.ts,
// bodyWriter). What a client reads must be exactly what was produced, whatever the characters, for a request
// that waited its turn behind another on the same connection (pipelined), and for an HTTP/1.0 client, which
// takes no chunks.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventChannel, sseEvent } from '../../../shared/http/event-stream.js';
import { defineRoute } from '../../../shared/http/route.js';
import { serveRoutes, type RouteServer } from '../../support/api-server.js';
import { testServices, type TestServices } from '../../support/services.js';

const TEXTS = ['plain', 'héllo wörld', '✓ 漢字 🙂', 'x'.repeat(20_000)];
const EXPECTED = TEXTS.map((text) => sseEvent('delta', { text })).join('');

const route = (
  name: string,
  path: string,
  handler: () => Promise<{
    status: number;
    headers?: Record<string, string>;
    json?: unknown;
    stream?: AsyncIterable<string>;
  }>,
) =>
  defineRoute({
    api: 'core',
    name,
    method: 'GET',
    path,
    summary: name,
    tag: 'Test',
    auth: 'none',
    errors: 'core',
    responses: {},
    handler,
  });

/** A raw HTTP exchange: what the server sent until it closed the connection or `done` holds. */
function exchange(port: number, request: string, done: (text: string) => boolean): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const socket = net.connect(port, '127.0.0.1', () => socket.write(request));
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => {
      text += d;
      if (done(text)) socket.end();
    });
    socket.on('close', () => resolve(text));
    socket.on('error', reject);
  });
}

/** The body of a chunked response, decoded; throws on a frame that is not well formed. */
function dechunk(raw: string): string {
  const bytes = Buffer.from(raw, 'utf8');
  const parts: Buffer[] = [];
  for (let at = 0; ;) {
    const eol = bytes.indexOf('\r\n', at);
    const size = parseInt(bytes.subarray(at, eol).toString('latin1'), 16);
    if (!Number.isFinite(size) || eol < 0) throw new Error(`bad chunk header at ${at}`);
    if (size === 0) return Buffer.concat(parts).toString('utf8');
    parts.push(bytes.subarray(eol + 2, eol + 2 + size));
    if (bytes.subarray(eol + 2 + size, eol + 4 + size).toString('latin1') !== '\r\n')
      throw new Error(`chunk not closed at ${eol + 2 + size}`);
    at = eol + 4 + size;
  }
}

describe('streamed answers on the Node host', () => {
  let services: TestServices;
  let server: RouteServer;
  let port: number;

  beforeAll(async () => {
    services = await testServices();
    const events = () => {
      const channel = new EventChannel();
      // Pieces pushed over a few turns of the loop, as a model's arrive.
      void (async () => {
        for (const text of TEXTS) {
          await new Promise((r) => setTimeout(r, 5));
          channel.push(sseEvent('delta', { text }));
        }
        channel.end();
      })();
      return Promise.resolve({ status: 200, headers: { 'content-type': 'text/event-stream' }, stream: channel });
    };
    const slow = () =>
      new Promise<{ status: number; json: unknown }>((r) =>
        setTimeout(() => r({ status: 200, json: { first: true } }), 100),
      );
    server = await serveRoutes([route('test-events', '/events', events), route('test-slow', '/slow', slow)], services);
    port = server.port;
  });

  afterAll(async () => {
    await server.close();
    await services.close();
  });

  it('gives a client exactly the events produced, in chunks it can read', async () => {
    const res = await fetch(`http://127.0.0.1:${port}/events`);
    expect(res.headers.get('transfer-encoding')).toBe('chunked');
    expect(await res.text()).toBe(EXPECTED);
  });

  it('frames a stream that waited behind another request on the same connection', async () => {
    const raw = await exchange(
      port,
      'GET /slow HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n',
      (t) => t.split('HTTP/1.1 200').length === 3 && t.endsWith('\r\n0\r\n\r\n'),
    );
    const [first, second = ''] = raw.split(/(?=HTTP\/1\.1 200)/);
    expect(first).toContain('{"first":true}');
    const [head, body] = [second.slice(0, second.indexOf('\r\n\r\n')), second.slice(second.indexOf('\r\n\r\n') + 4)];
    expect(head.toLowerCase()).toContain('transfer-encoding: chunked');
    expect(dechunk(body)).toBe(EXPECTED);
  });

  it('sends an HTTP/1.0 client the events unframed, and closes the connection at the end', async () => {
    const raw = await exchange(port, 'GET /events HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n', () => false);
    const head = raw.slice(0, raw.indexOf('\r\n\r\n'));
    expect(head.toLowerCase()).not.toContain('transfer-encoding');
    expect(raw.slice(raw.indexOf('\r\n\r\n') + 4)).toBe(EXPECTED);
  });
});
