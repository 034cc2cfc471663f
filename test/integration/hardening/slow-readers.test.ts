// Finding 6 of the second hardening round: clients that ask for a streamed answer and then stop reading.
// Loopback sockets take tens of MB from a reader that reads nothing (rmem up to 32 MiB here), more than a
// completion's answer can be, so the host's bounds are tried with a route that streams as fast as it can,
// through the same event channel a streamed completion uses, on the Node host `npm start` serves.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventChannel, sseEvent } from '../../../shared/http/event-stream.js';
import { defineRoute } from '../../../shared/http/route.js';
import { serveRoutes, type RouteServer } from '../../support/api-server.js';
import { INSTANCE, testServices, type TestServices } from '../../support/services.js';
import { startMockLlm } from '../../../scripts/mock-llm.js';
import { seedAgent } from '../../support/agents.js';
import { startBundledApp } from '../../support/bundled-app.js';

/** Clients that ask for a stream and stop reading, at once. */
const CLIENTS = 50;

describe('streamed answers to clients that stop reading', () => {
  let services: TestServices;
  let port: number;
  let server: RouteServer;
  const producers = { running: 0, stopped: 0 };

  beforeAll(async () => {
    services = await testServices();
    // A producer as fast as a model can be: a piece whenever the loop turns, until the stream is let go. The
    // host takes an event channel's events as they are pushed (a completion's stream) and any other stream by
    // iterating it: both are tried.
    const firehose = (path: string, direct: boolean) =>
      defineRoute({
        api: 'core',
        name: `test-firehose${direct ? '-channel' : ''}`,
        method: 'GET',
        path,
        summary: 'An endless event stream',
        tag: 'Test',
        auth: 'none',
        errors: 'core',
        responses: {},
        handler: () => {
          let open = true;
          const stop = () => {
            open = false;
            producers.stopped++;
          };
          const channel = new EventChannel(undefined, direct ? stop : undefined);
          const piece = sseEvent('delta', { text: 'x'.repeat(4000) });
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
              stop();
            }
          }
          return Promise.resolve({
            status: 200,
            headers: { 'content-type': 'text/event-stream' },
            stream: direct ? channel : events(),
          });
        },
      });
    server = await serveRoutes([firehose('/firehose', false), firehose('/firehose-channel', true)], services);
    port = server.port;
  });

  afterAll(async () => {
    await server.close();
    await services.close();
  });

  it.each(['/firehose', '/firehose-channel'])(
    '6: cuts the stream of a client that stops reading within the write timeout, holding no more than the ' +
      'bounded backlog, and stops the producer (%s)',
    async (path) => {
      const before = process.memoryUsage().rss;
      const stoppedBefore = producers.stopped;
      const started = Date.now();
      const sockets = Array.from({ length: CLIENTS }, () => {
        const socket = net.connect(port, '127.0.0.1', () => {
          socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
          socket.pause();
        });
        socket.on('error', () => undefined);
        return socket;
      });
      // A paused client socket reports no close until it reads: the service's side is watched instead.
      const connections = () => new Promise<number>((resolve) => server.server.getConnections((_e, n) => resolve(n)));
      let peak = 0;
      while (producers.stopped - stoppedBefore < CLIENTS || (await connections()) > 0) {
        peak = Math.max(peak, process.memoryUsage().rss);
        await new Promise((r) => setTimeout(r, 100));
      }
      for (const s of sockets) s.destroy();
      const grown = (peak - before) / 1024 / 1024;
      console.log(
        `slow readers (${path}): ${CLIENTS} of ${CLIENTS} streams cut by the service after ` +
          `${Math.round((Date.now() - started) / 1000)} s, producers stopped ${producers.stopped} of ` +
          `${producers.running}; RSS grew ${grown.toFixed(0)} MiB at most (${(grown / CLIENTS).toFixed(2)} MiB ` +
          `a client)`,
      );
      expect(producers.stopped).toBe(producers.running);
      // What a client that stopped reading costs the service: its bounded backlog, at most a MiB.
      expect(grown / CLIENTS).toBeLessThanOrEqual(1);
    },
    60_000,
  );
});

describe('downloads to clients that stop reading, against the bundle', () => {
  it('6: the service cuts a streamed answer its client stopped taking for 30 s rather than hold it open', async () => {
    const llm = await startMockLlm();
    const app = await startBundledApp({ MAX_UPLOAD_BYTES: String(80 * 1024 * 1024) });
    try {
      await seedAgent(app, 'filer', { llmUrl: llm.url });
      // Larger than what loopback sockets take from a reader that reads nothing (tens of MiB here).
      const size = 72 * 1024 * 1024;
      const form = new FormData();
      form.append('file', new Blob([new Uint8Array(Buffer.alloc(size, 'x'))], { type: 'text/plain' }), 'big.txt');
      form.append('agent_name', 'filer');
      const uploaded = await fetch(`${app.core}/instances/${INSTANCE}/files/upload`, {
        method: 'POST',
        body: form,
        headers: { authorization: `Bearer ${await app.token()}` },
      });
      expect(uploaded.status).toBe(200);
      const fileId = ((await uploaded.json()) as { object_id: string }).object_id.split('/').pop();
      const token = await app.token();
      const port = Number(new URL(app.core).port);
      const sockets = Array.from({ length: 3 }, () => {
        const socket = net.connect(port, '127.0.0.1', () => {
          socket.write(
            `GET /instances/${INSTANCE}/files/${fileId}/content HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ` +
              `Bearer ${token}\r\n\r\n`,
          );
          socket.pause();
        });
        socket.on('error', () => undefined);
        return socket;
      });
      // Past the write timeout, the clients read again: what they get is what was sent before the cut.
      await new Promise((r) => setTimeout(r, 36_000));
      const received = await Promise.all(
        sockets.map(
          (socket) =>
            new Promise<number>((resolve) => {
              let bytes = 0;
              socket.on('data', (d: Buffer) => (bytes += d.length));
              socket.on('close', () => resolve(bytes));
              socket.on('end', () => resolve(bytes));
              // A connection the service kept open would deliver the whole file now.
              setTimeout(() => (socket.destroy(), resolve(bytes)), 15_000);
              socket.resume();
            }),
        ),
      );
      const downloads = received.map((b) => `${Math.round(b / 1024 / 1024)} MiB`).join(', ');
      console.log(`slow downloads: ${downloads} of ${size / 1024 / 1024} MiB before the service cut them`);
      for (const bytes of received) expect(bytes).toBeLessThan(size);
      expect((await fetch(`${app.core}/status`)).status).toBe(200);
    } finally {
      await app.stop();
      await llm.close();
    }
  }, 90_000);
});
