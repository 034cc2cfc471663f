// `npm start`: the whole service on one machine with no Azure account: both APIs, the queue worker, the
// embedded store, Azurite for blobs and queues (when using development storage) and the local identity
// provider. Also the entry point for self-hosting (set STORE, AzureWebJobsStorage and AUTH_* instead).
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';
import { ConfigError, loadConfig } from '../shared/config.js';
import type { Standalone } from '../shared/http/standalone.js';
import type { Services } from '../shared/services.js';
import { startTelemetry, stopTelemetry } from '../shared/telemetry/setup.js';
import { VERSION } from '../shared/version.js';
import { connectionStringFor, freePort, startAzurite, type Azurite } from './azurite.js';

/** Settings `npm run token` must share with the server (the issuer and the signing key), as given. */
const TOKEN_SETTINGS = ['HOST', 'CORE_PORT', 'DATA_DIR'] as const;

/** `npm run token` in a checkout; where only the built code is (a container image), the built script. */
const TOKEN_SCRIPT = ['./token.ts', '../../scripts/token.ts'].some((p) =>
  existsSync(fileURLToPath(new URL(p, import.meta.url))),
)
  ? 'npm run -s token'
  : 'node dist/scripts/token.js';

/** The exact command that prints a token this server accepts, whatever settings it runs with. */
function tokenCommand(dataDir: string): string {
  const shell = (v: string) => (/^[\w@%+=:,./-]+$/.test(v) ? v : `'${v.replace(/'/g, `'\\''`)}'`);
  const settings = TOKEN_SETTINGS.filter((k) => process.env[k] !== undefined).map(
    (k) => `${k}=${shell(k === 'DATA_DIR' ? dataDir : (process.env[k] ?? ''))}`,
  );
  return `TOKEN=$(${[...settings, TOKEN_SCRIPT].join(' ')})`;
}

/**
 * V8 lets the old generation grow to up to four times what survived the last full collection before the
 * next one; a busy server's garbage then sits in memory. Twice: after the peers benchmark 167 to 170 MiB
 * resident where V8's own factor left 171 to 220, for no CPU per request we could measure (0.69 to 0.73 ms
 * against 0.69 to 0.75; 1.5 times kept 153 to 159 MiB but cost 4% of CPU and half a millisecond of p99).
 * A factor given on the command line (`node --heap-growing-percent=N`) wins.
 */
function keepHeapCompact(): void {
  const given = process.execArgv.some((a) => a.startsWith('--heap-growing-percent'));
  if (!given) v8.setFlagsFromString('--heap-growing-percent=100');
}

async function main() {
  keepHeapCompact();
  let config = loadConfig(process.env, VERSION);

  // Development storage: an Azurite of this DATA_DIR's own, on free ports, its data in DATA_DIR/azurite, so
  // two services with different DATA_DIR never share blobs or queues, and nobody else's Azurite is used.
  // It starts while the service's modules load (each takes about as long as the other).
  const devStorage =
    config.storage.kind === 'connection-string' && /UseDevelopmentStorage=true/i.test(config.storage.connectionString);
  const ports = devStorage ? { blobPort: await freePort(), queuePort: await freePort() } : undefined;
  const azuriteStarting = ports
    ? startAzurite({ ...ports, location: path.join(config.dataDir, 'azurite') })
    : undefined;
  if (ports)
    config = {
      ...config,
      storage: { kind: 'connection-string', connectionString: connectionStringFor(ports.blobPort, ports.queuePort) },
    };
  // Handled: its failure is met where it is awaited, not as an unhandled rejection while modules load.
  azuriteStarting?.catch(() => undefined);
  const loading = Promise.all([
    import('../functions/groups.js'),
    import('../shared/http/standalone.js'),
    import('../shared/services.js'),
    import('../functions/portal.js'),
    import('../shared/auth/local-idp.js'),
  ]);

  // What is running, for stopping: a signal can come at any moment of the start, and nothing started
  // (not even an Azurite still starting) may outlive the process.
  let services: Services | undefined;
  let app: Standalone | undefined;
  const state = { stopping: false };
  const stopAll = async () => {
    await app?.close(5000);
    await services?.close();
    await (await azuriteStarting?.catch(() => undefined))?.stop();
  };
  const stop = async () => {
    if (state.stopping) return;
    state.stopping = true;
    // Whatever hangs (an upstream that never answers), the process is gone within a bounded time.
    setTimeout(() => process.exit(1), 15_000).unref();
    services?.log.info('Stopping', { grace_ms: 5000 });
    const t0 = performance.now();
    await stopAll();
    services?.log.info('Stopped', { duration_ms: Math.round(performance.now() - t0) });
    await stopTelemetry();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());

  let azurite: Azurite | undefined;
  let signInLink = '';
  try {
    await startTelemetry(config);
    const [groups, { startStandalone }, { createServices }, portal, idp] = await loading;
    const { QUEUE_HANDLERS, ROUTES, TIMERS, UPGRADES } = groups;
    // The portal's development sign-in asks for this code: the links carry it in their fragment (never sent
    // to a server), so whoever started the service signs in by opening one, and nobody else on the machine.
    if (config.auth.kind === 'local' && portal.localSignIn(config)) {
      signInLink = `#sign-in=${await idp.localSignInCode(config.auth.keyFile)}`;
    }
    services = await createServices(config);
    // The APIs answer as soon as they listen; the queue workers start, and the banner is printed, once
    // Azurite is up (until then /health/ready says the blobs and queues are not).
    app = await startStandalone(ROUTES, QUEUE_HANDLERS, services, {
      upgrades: UPGRADES,
      timers: TIMERS,
      ...(azuriteStarting ? { storageReady: azuriteStarting } : {}),
    });
    azurite = await azuriteStarting;
  } catch (e) {
    // A failed start stops what it started, as a signal would.
    state.stopping = true;
    await stopAll();
    throw e;
  }
  // A signal during the start: stop() is under way and the banner would be a lie.
  if (state.stopping) return;
  const store =
    config.store.kind === 'embedded' ? `embedded (${config.store.file})` : `cosmos (${config.store.endpoint})`;
  const token =
    config.auth.kind === 'local'
      ? `${tokenCommand(config.dataDir)}   (another user: add ` +
        `${TOKEN_SCRIPT.startsWith('npm') ? '-- ' : ''}--upn alice@example.com)`
      : `from ${config.auth.issuer}`;
  const blobsAndQueues = azurite
    ? `Azurite of this DATA_DIR on 127.0.0.1:${azurite.blobPort}/${azurite.queuePort}`
    : 'configured storage account';
  process.stdout.write(
    [
      `Agent platform ${VERSION} is running`,
      `  Core API:        ${app.coreUrl}`,
      `  Management API:  ${app.managementUrl}`,
      `  Instance id:     ${config.instanceId}`,
      `  Store:           ${store}`,
      `  Blobs/queues:    ${blobsAndQueues}`,
      `  Get a token:     ${token}`,
      `  Portals:         ${app.coreUrl}/portal/${signInLink} (chat), ` +
        `${app.coreUrl}/portal/manage.html${signInLink} (management)`,
      `  Try:             curl ${app.coreUrl}/status`,
      '',
    ].join('\n'),
  );
  services.log.info('Started', {
    version: VERSION,
    core: app.coreUrl,
    management: app.managementUrl,
    store: config.store.kind,
    telemetry: config.otlp ? 'otlp' : config.appInsightsConnectionString ? 'azure-monitor' : 'off',
  });
}

main().catch((e: unknown) => {
  process.stderr.write(
    `${e instanceof ConfigError ? e.message : e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`,
  );
  process.exit(1);
});
