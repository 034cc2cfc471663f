// The service under benchmark: in-process, both APIs on free ports, the embedded store in a temp folder.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { QUEUE_HANDLERS, ROUTES } from '../functions/groups.js';
import { LOCAL_DEFAULT_USER, loadLocalKey, mintLocalToken } from '../shared/auth/local-idp.js';
import type { Principal } from '../shared/auth/principal.js';
import { loadConfig } from '../shared/config.js';
import { startStandalone } from '../shared/http/standalone.js';
import { createLog } from '../shared/log.js';
import { createServices, type Services } from '../shared/services.js';

export interface BenchApp {
  core: string;
  management: string;
  instanceId: string;
  auth: Record<string, string>;
  principal: Principal;
  services: Services;
  close(): Promise<void>;
}

export async function startBenchApp(): Promise<BenchApp> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'bench-'));
  const config = loadConfig({ DATA_DIR: dataDir, CORE_PORT: '0', MANAGEMENT_PORT: '0' });
  const services = await createServices(config, { log: createLog({ quiet: true }) });
  const app = await startStandalone(ROUTES, QUEUE_HANDLERS, services, { consumers: false });
  if (config.auth.kind !== 'local') throw new Error('bench uses the local identity provider');
  const token = await mintLocalToken(await loadLocalKey(config.auth.keyFile), config.auth.issuer, config.auth.audience, { upn: LOCAL_DEFAULT_USER.upn, oid: LOCAL_DEFAULT_USER.oid });
  return {
    core: app.coreUrl,
    management: app.managementUrl,
    instanceId: config.instanceId,
    auth: { authorization: `Bearer ${token}` },
    principal: await services.bearer.verify(token),
    services,
    async close() {
      await app.close();
      await services.close();
    },
  };
}
