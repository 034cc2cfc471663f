// The service under benchmark: in-process, both APIs on free ports, on the embedded store in a temp folder or
// on the Cosmos adapter.
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { QUEUE_HANDLERS, ROUTES, UPGRADES } from '../functions/groups.js';
import { LOCAL_DEFAULT_USER, loadLocalKey, mintLocalToken } from '../shared/auth/local-idp.js';
import type { Principal } from '../shared/auth/principal.js';
import { loadConfig } from '../shared/config.js';
import { startStandalone } from '../shared/http/standalone.js';
import { createLog } from '../shared/log.js';
import { createServices, type Services } from '../shared/services.js';

export interface BenchApp {
  store: 'embedded' | 'cosmos';
  core: string;
  management: string;
  instanceId: string;
  auth: Record<string, string>;
  principal: Principal;
  services: Services;
  close(): Promise<void>;
}

/** A Cosmos-compatible server in a child process, as a remote account would be. */
async function startCosmosServer(): Promise<{ url: string; stop(): void }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/cosmos-server.ts'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.once('data', (d: Buffer) => resolve(d.toString().trim()));
    child.once('exit', (code) => reject(new Error(`cosmos server exited with ${code}`)));
  });
  return { url, stop: () => child.kill('SIGTERM') };
}

/** The service in-process on the embedded store, or on the Cosmos adapter against a local Cosmos-compatible server. */
export async function startBenchApp(
  store: 'embedded' | 'cosmos' = 'embedded',
  env: Record<string, string> = {},
): Promise<BenchApp> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'bench-'));
  const cosmos = store === 'cosmos' ? await startCosmosServer() : undefined;
  const config = loadConfig({
    DATA_DIR: dataDir,
    CORE_PORT: '0',
    MANAGEMENT_PORT: '0',
    ...(cosmos ? { STORE: 'cosmos', COSMOS_ENDPOINT: cosmos.url, COSMOS_KEY: 'bench', COSMOS_DATABASE: 'bench' } : {}),
    ...env,
  });
  const services = await createServices(config, { log: createLog({ quiet: true }) });
  const app = await startStandalone(ROUTES, QUEUE_HANDLERS, services, { consumers: false, upgrades: UPGRADES });
  if (config.auth.kind !== 'local') throw new Error('bench uses the local identity provider');
  const token = await mintLocalToken(
    await loadLocalKey(config.auth.keyFile),
    config.auth.issuer,
    config.auth.audience,
    { upn: LOCAL_DEFAULT_USER.upn, oid: LOCAL_DEFAULT_USER.oid },
  );
  return {
    store,
    core: app.coreUrl,
    management: app.managementUrl,
    instanceId: config.instanceId,
    auth: { authorization: `Bearer ${token}` },
    principal: await services.bearer.verify(token),
    services,
    async close() {
      await app.close();
      await services.close();
      cosmos?.stop();
    },
  };
}
