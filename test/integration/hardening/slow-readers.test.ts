// Finding 6 of the second hardening round: clients that ask for a streamed answer and then stop reading.
// Loopback sockets take tens of MB from a reader that reads nothing (rmem up to 32 MiB here), more than a
// completion's answer can be, so the host's bounds are tried with a route that streams as fast as it can,
// through the same event channel a streamed completion uses, on the Node host `npm start` serves.
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventChannel, sseEvent } from '../../../shared/http/event-stream.js';
import { createApiServer } from '../../../shared/http/node-host.js';
import { defineRoute } from '../../../shared/http/route.js';
import { testServices, type TestServices } from '../../support/services.js';

describe('streamed answers to clients that stop reading', () => {
  let services: TestServices;
  let port: number;
  let server: ReturnType<typeof createApiServer>;
  const producers = { running: 0, stopped: 0 };

  beforeAll(async () => {
    services = await testServices();
    // A producer as fast as a model can be: a piece whenever the loop turns, until the stream is let go.
    const route = defineRoute({
      api: 'core',
      name: 'test-firehose',
      method: 'GET',
      path: '/firehose',
      summary: 'An endless event stream',
      tag: 'Test',
      auth: 'none',
      errors: 'core',
      responses: {},
      handler: () => {
        const channel = new EventChannel();
        const piece = sseEvent('delta', { text: 'x'.repeat(4000) });
        let open = true;
        producers.running++;
        const pump = () => {
          if (!open) return;
          for (let i = 0; i < 50; i++) channel.push(piece);
          setImmediate(pump);
        };
        pump();
        async function* events() {
          try {
            yield* channel;
          } finally {
            open = false;
            producers.stopped++;
          }
        }
        return Promise.resolve({ status: 200, headers: { 'content-type': 'text/event-stream' }, stream: events() });
      },
    });
    server = createApiServer('core', [route], services);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await services.close();
  });

  it('6: cuts the stream of a client that stops reading within the write timeout, holding no more than the bounded backlog, and stops the producer', async () => {
    const before = process.memoryUsage().rss;
    const started = Date.now();
    const sockets = Array.from({ length: 10 }, () => {
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.write('GET /firehose HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
        socket.pause();
      });
      socket.on('error', () => undefined);
      return socket;
    });
    // A paused client socket reports no close until it reads: the service's side is watched instead.
    const connections = () => new Promise<number>((resolve) => server.getConnections((_e, n) => resolve(n)));
    let peak = 0;
    while (producers.stopped < 10 || (await connections()) > 0) {
      peak = Math.max(peak, process.memoryUsage().rss);
      await new Promise((r) => setTimeout(r, 100));
    }
    for (const s of sockets) s.destroy();
    const grown = (peak - before) / 1024 / 1024;
    console.log(`slow readers: 10 of 10 streams cut by the service after ${Math.round((Date.now() - started) / 1000)} s, producers stopped ${producers.stopped} of ${producers.running}; RSS grew ${grown.toFixed(0)} MiB at most`);
    expect(producers.stopped).toBe(producers.running);
  }, 60_000);
});
