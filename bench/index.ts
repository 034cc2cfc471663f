// `npm run bench`: the service's request path against a plain node:http server measured in the same run.
// Ratios, not absolute times, are what to compare between machines.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ROUTES, QUEUE_HANDLERS } from '../functions/groups.js';
import { loadLocalKey, mintLocalToken } from '../shared/auth/local-idp.js';
import { startStandalone } from '../shared/http/standalone.js';
import { createServices } from '../shared/services.js';
import { openSqliteStore } from '../shared/store/sqlite-store.js';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '../shared/config.js';
import { createLog } from '../shared/log.js';
import { load, report } from './load.js';

async function baselineServer(): Promise<{ url: string; close(): void }> {
  const body = JSON.stringify({ status: 'ready', name: 'CoreAPI', version: '0.0.0', instance_id: 'x' });
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => server.close() };
}

async function main() {
  const seconds = Number(process.env.BENCH_SECONDS ?? 3);
  const config = loadConfig({ DATA_DIR: mkdtempSync(path.join(tmpdir(), 'bench-')), CORE_PORT: '0', MANAGEMENT_PORT: '0' });
  const services = await createServices(config, { store: openSqliteStore(':memory:'), log: createLog({ quiet: true }) });
  const app = await startStandalone(ROUTES, QUEUE_HANDLERS, services, { consumers: false });
  const baseline = await baselineServer();
  if (config.auth.kind !== 'local') throw new Error('bench uses the local identity provider');
  const token = await mintLocalToken(await loadLocalKey(config.auth.keyFile), config.auth.issuer, config.auth.audience, { upn: 'bench@example.com' });
  const auth = { authorization: `Bearer ${token}` };

  console.log(`HTTP path, ${seconds} s per case, 32 connections, loopback (client and server share the cores)`);
  const base = await load('baseline: plain node:http JSON', `${baseline.url}/status`, { seconds });
  const results = [
    await load('GET /status (no auth)', `${app.coreUrl}/status`, { seconds }),
    await load('GET /branding (JWT + settings)', `${app.coreUrl}/instances/${config.instanceId}/branding`, { seconds, headers: auth }),
  ];
  report(base, results);

  baseline.close();
  await app.close();
  await services.close();
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
