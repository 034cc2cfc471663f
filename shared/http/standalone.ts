// The standalone service: both APIs on their own ports and an in-process consumer per queue handler.
// `checkAnswers` validates every JSON answer against its route's schema (pipeline.ts; on under vitest).
import type { Server } from 'node:http';
import { startQueueConsumer, type Consumer } from '../queues/local-consumer.js';
import type { QueueHandler } from '../queues/handler.js';
import type { Timer } from '../queues/timer.js';
import { ConfigError } from '../config.js';
import type { Services } from '../services.js';
import { createApiServer, InFlight } from './node-host.js';
import type { PipelineOptions } from './pipeline.js';
import type { Route } from './route.js';

/** A WebSocket endpoint: it takes the upgrades of the Core API's server it is attached to. */
export type Upgrade = (server: Server, services: Services) => { close(): void };

export interface Standalone {
  coreUrl: string;
  managementUrl: string;
  /** Bounded: requests and queue work in flight get `graceMs` to finish, then are cut off. */
  close(graceMs?: number): Promise<void>;
}

/**
 * Connections the kernel holds for the server while it is busy (capped by net.core.somaxconn). With Node's
 * 511, a burst of new connections (thousands of clients opening streams at once) overflows the queue: the
 * kernel drops their SYNs and the clients retry 1, 3 and 7 s later, each retry a burst of its own.
 */
const LISTEN_BACKLOG = 4096;

/** Listens; a port that is taken or not allowed is a ConfigError naming the setting. */
const listen = (server: Server, { host, port, setting }: { host: string; port: number; setting: string }) =>
  new Promise<string>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) => {
      if (e.code === 'EADDRINUSE')
        reject(
          new ConfigError(
            `${setting}=${port}: the port is in use on ${host}; stop what uses it or choose another ${setting}`,
          ),
        );
      else if (e.code === 'EACCES' || e.code === 'EADDRNOTAVAIL')
        reject(new ConfigError(`${setting}=${port} on HOST=${host} cannot be listened on (${e.code})`));
      else reject(e);
    });
    server.listen({ port, host, backlog: LISTEN_BACKLOG }, () => {
      // A TCP server's address is an AddressInfo (a string only for pipes and sockets).
      const address = server.address();
      const bound = typeof address === 'object' && address !== null ? address.port : port;
      resolve(`http://${host.includes(':') ? `[${host}]` : host}:${bound}`);
    });
  });

/** Stops accepting connections, lets requests in flight finish for `graceMs`, then cuts what is left. */
const closeServer = (server: Server, graceMs = 0) =>
  new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
    setTimeout(() => server.closeAllConnections(), graceMs).unref();
  });

/**
 * Starts both API servers (port 0 picks free ports) and the queue consumers: at once, or once `storageReady`
 * resolves (the servers answer meanwhile; readiness reports the storage until then).
 */
export async function startStandalone(
  routes: readonly Route[],
  queueHandlers: readonly QueueHandler[],
  services: Services,
  options: {
    consumers?: boolean;
    storageReady?: Promise<unknown>;
    upgrades?: readonly Upgrade[];
    timers?: readonly Timer[];
  } & PipelineOptions = {},
): Promise<Standalone> {
  const { host, corePort, managementPort } = services.config;
  const handlers = new InFlight();
  const server = { inFlight: handlers, checkAnswers: options.checkAnswers };
  const core = createApiServer('core', routes, services, server);
  const management = createApiServer('management', routes, services, server);
  // WebSocket endpoints (the realtime relay) share the Core API's port.
  const upgrades = (options.upgrades ?? []).map((attach) => attach(core, services));
  const coreUrl = await listen(core, { host, port: corePort, setting: 'CORE_PORT' });
  const managementUrl = await listen(management, { host, port: managementPort, setting: 'MANAGEMENT_PORT' }).catch(
    async (e: unknown) => {
      await closeServer(core);
      throw e;
    },
  );
  // Ports chosen at listen (0): the public URLs not configured are this host's on the ports taken.
  const urls = services.config.publicUrls;
  if (!urls.coreConfigured) urls.core = urls.core.replace(/:\d+$/, `:${new URL(coreUrl).port}`);
  if (!urls.managementConfigured) urls.management = urls.management.replace(/:\d+$/, `:${new URL(managementUrl).port}`);
  const consumers: Consumer[] = [];
  const clocks: NodeJS.Timeout[] = [];
  let closed = false;
  const startConsumers = async () => {
    if (options.consumers === false || !services.config.queueWorkers) return;
    const queues = await services.queues();
    // Closed while the storage was coming up, or the queue client being made: nothing to start.
    if (closed) return;
    const lease = { idlePollMs: 500, visibilityTimeoutSeconds: services.config.queueVisibilityTimeoutSeconds };
    consumers.push(
      ...queueHandlers.map((h) =>
        startQueueConsumer(h, queues, services, { ...lease, ...(h.concurrency ? { concurrency: h.concurrency } : {}) }),
      ),
    );
    for (const t of options.timers ?? []) {
      // One run at a time per timer: a slow run is not overlapped by the next tick.
      let running = false;
      const tick = () => {
        if (running || closed) return;
        running = true;
        t.run(services)
          .catch((e: unknown) =>
            services.log.warn('A timer failed', { timer: t.name, error: e instanceof Error ? e.message : String(e) }),
          )
          .finally(() => (running = false));
      };
      clocks.push(setInterval(tick, t.everyMs).unref());
    }
  };
  (options.storageReady ?? Promise.resolve())
    .then(startConsumers, () => undefined)
    .catch((e: unknown) =>
      services.log.error('The queue consumers did not start', { error: e instanceof Error ? e.message : String(e) }),
    );
  const unsubscribe = services.producer.onSend(() => consumers.forEach((c) => c.wake()));
  return {
    coreUrl,
    managementUrl,
    async close(graceMs = 5000) {
      closed = true;
      for (const c of clocks) clearInterval(c);
      unsubscribe();
      for (const u of upgrades) u.close();
      const started = Date.now();
      const servers = Promise.all([closeServer(core, graceMs + 1000), closeServer(management, graceMs + 1000)]);
      // Handlers still running at the end of the grace answer 503 (their connections close after that),
      // and connections can be gone while their handlers still run (a client that left mid-request).
      await Promise.all([...consumers.map((c) => c.stop(graceMs)), handlers.drained(graceMs)]);
      handlers.answerRemaining();
      await servers;
      await handlers.drained(Math.max(0, graceMs - (Date.now() - started)));
    },
  };
}
