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
import { isListening, startAzurite, type Azurite } from './azurite.js';

async function main() {
  const config = loadConfig(process.env, VERSION);
  await startTelemetry(config);

  let azurite: Azurite | undefined;
  const devStorage = config.storage.kind === 'connection-string' && /UseDevelopmentStorage=true/i.test(config.storage.connectionString);
  if (devStorage && !(await isListening(10000))) {
    azurite = await startAzurite({ blobPort: 10000, queuePort: 10001, location: path.join(config.dataDir, 'azurite') });
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
  const token = config.auth.kind === 'local' ? 'npm run token   (another user: npm run token -- --upn alice@example.com)' : `from ${config.auth.issuer}`;
  process.stdout.write(
    [
      `Agent platform ${VERSION} is running`,
      `  Core API:        ${app.coreUrl}`,
      `  Management API:  ${app.managementUrl}`,
      `  Instance id:     ${config.instanceId}`,
      `  Store:           ${store}`,
      `  Blobs/queues:    ${azurite ? 'Azurite on 127.0.0.1:10000/10001' : devStorage ? 'existing Azurite on 127.0.0.1:10000' : 'configured storage account'}`,
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
