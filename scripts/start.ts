// `npm start`: the whole service on one machine with no Azure account: both APIs, the queue worker, the
// embedded store, Azurite for blobs and queues (when using development storage) and the local identity
// provider. Also the entry point for self-hosting (set STORE, AzureWebJobsStorage and AUTH_* instead).
import path from 'node:path';
import { QUEUE_HANDLERS, ROUTES } from '../functions/groups.js';
import { ConfigError, loadConfig } from '../shared/config.js';
import { startStandalone, type Standalone } from '../shared/http/standalone.js';
import { createServices, type Services } from '../shared/services.js';
import { startTelemetry } from '../shared/telemetry/setup.js';
import { VERSION } from '../shared/version.js';
import { freePort, startAzurite, type Azurite } from './azurite.js';

/** Settings `npm run token` must share with the server (the issuer and the signing key), as given. */
const TOKEN_SETTINGS = ['HOST', 'CORE_PORT', 'DATA_DIR'] as const;

/** The exact command that prints a token this server accepts, whatever settings it runs with. */
function tokenCommand(dataDir: string): string {
  const shell = (v: string) => (/^[\w@%+=:,./-]+$/.test(v) ? v : `'${v.replace(/'/g, `'\\''`)}'`);
  const settings = TOKEN_SETTINGS.filter((k) => process.env[k] !== undefined).map((k) => `${k}=${shell(k === 'DATA_DIR' ? dataDir : (process.env[k] ?? ''))}`);
  return `TOKEN=$(${[...settings, 'npm run -s token'].join(' ')})`;
}

async function main() {
  let config = loadConfig(process.env, VERSION);
  await startTelemetry(config);

  // Development storage: an Azurite of this DATA_DIR's own, on free ports, its data in DATA_DIR/azurite, so
  // two services with different DATA_DIR never share blobs or queues, and nobody else's Azurite is used.
  let azurite: Azurite | undefined;
  const devStorage = config.storage.kind === 'connection-string' && /UseDevelopmentStorage=true/i.test(config.storage.connectionString);
  if (devStorage) {
    azurite = await startAzurite({ blobPort: await freePort(), queuePort: await freePort(), location: path.join(config.dataDir, 'azurite') });
    config = { ...config, storage: { kind: 'connection-string', connectionString: azurite.connectionString } };
  }

  let services: Services | undefined;
  let app: Standalone;
  try {
    services = await createServices(config);
    app = await startStandalone(ROUTES, QUEUE_HANDLERS, services);
  } catch (e) {
    // Nothing started here outlives a failed start.
    await services?.close();
    await azurite?.stop();
    throw e;
  }
  const running = services;
  const store = config.store.kind === 'embedded' ? `embedded (${config.store.file})` : `cosmos (${config.store.endpoint})`;
  const token = config.auth.kind === 'local' ? `${tokenCommand(config.dataDir)}   (another user: add -- --upn alice@example.com)` : `from ${config.auth.issuer}`;
  process.stdout.write(
    [
      `Agent platform ${VERSION} is running`,
      `  Core API:        ${app.coreUrl}`,
      `  Management API:  ${app.managementUrl}`,
      `  Instance id:     ${config.instanceId}`,
      `  Store:           ${store}`,
      `  Blobs/queues:    ${azurite ? `Azurite of this DATA_DIR on 127.0.0.1:${azurite.blobPort}/${azurite.queuePort}` : 'configured storage account'}`,
      `  Get a token:     ${token}`,
      `  Try:             curl ${app.coreUrl}/status`,
      '',
    ].join('\n'),
  );

  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    // Whatever hangs (an upstream that never answers), the process is gone within a bounded time.
    setTimeout(() => process.exit(1), 15_000).unref();
    await app.close(5000);
    await running.close();
    await azurite?.stop();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());
}

main().catch((e: unknown) => {
  process.stderr.write(`${e instanceof ConfigError ? e.message : e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
