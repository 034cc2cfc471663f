// The service as `npm start` runs it (the bundle, built once by the suite's global setup), started as a child
// process on free ports against the test Azurite, with tokens from its own local identity provider.
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { inject } from 'vitest';
import { freePort } from '../../scripts/azurite.js';
import { LOCAL_DEFAULT_USER, loadLocalKey, mintLocalToken } from '../../shared/auth/local-idp.js';
import { LOCAL_AUDIENCE } from '../../shared/config.js';
import { caller, type ApiClient } from './app.js';
import { startBuilt, type Running } from './processes.js';
import { tempDir } from './services.js';

export interface BundledApp extends ApiClient {
  process: Running;
  env: Record<string, string>;
  token(upn?: string, oid?: string): Promise<string>;
  stop(): Promise<void>;
}

export async function startBundledApp(env: Record<string, string> = {}): Promise<BundledApp> {
  // A free port can be taken by another test file between the pick and the start: pick again then.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnFreePorts(env);
    } catch (e) {
      if (attempt >= 3 || !/port is in use/.test(String(e))) throw e;
    }
  }
}

async function startOnFreePorts(env: Record<string, string>): Promise<BundledApp> {
  const [corePort, managementPort] = [await freePort(), await freePort()];
  const dataDir = tempDir();
  const suffix = randomUUID().slice(0, 8);
  const settings = {
    DATA_DIR: dataDir,
    CORE_PORT: String(corePort),
    MANAGEMENT_PORT: String(managementPort),
    AzureWebJobsStorage: inject('storageConnectionString'),
    ASYNC_COMPLETIONS_QUEUE: `ac-${suffix}`,
    WEBHOOKS_QUEUE: `wh-${suffix}`,
    PIPELINES_QUEUE: `dp-${suffix}`,
    EVALUATIONS_QUEUE: `ev-${suffix}`,
    ...env,
  };
  const running = await startBuilt(settings, /Get a token/);
  // The settings given win (a second process on the first one's data and ports).
  const [core, management] = [settings.CORE_PORT, settings.MANAGEMENT_PORT];
  const issuer = `http://127.0.0.1:${core}/local-idp`;
  const key = loadLocalKey(path.join(settings.DATA_DIR, 'local-idp', 'signing-key.json'));
  const token = async (upn?: string, oid?: string) =>
    mintLocalToken(
      await key,
      issuer,
      LOCAL_AUDIENCE,
      upn === undefined
        ? { upn: LOCAL_DEFAULT_USER.upn, oid: LOCAL_DEFAULT_USER.oid }
        : { upn, ...(oid ? { oid } : {}) },
    );
  return {
    process: running,
    env: settings,
    core: `http://127.0.0.1:${core}`,
    management: `http://127.0.0.1:${management}`,
    token,
    call: caller(token),
    stop: () => running.stop(),
  };
}
