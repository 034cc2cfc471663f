// A Core API server of the Node host on a free loopback port, for tests of the host itself with routes of their own.
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApiServer } from '../../shared/http/node-host.js';
import type { Route } from '../../shared/http/route.js';
import type { Services } from '../../shared/services.js';

export interface RouteServer {
  server: http.Server;
  port: number;
  /** Closes every connection and the server. */
  close(): Promise<void>;
}

export async function serveRoutes(routes: readonly Route[], services: Services): Promise<RouteServer> {
  const server = createApiServer('core', routes, services);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    server,
    port: (server.address() as AddressInfo).port,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
