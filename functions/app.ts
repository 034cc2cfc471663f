// The Azure Functions app: telemetry first, then every endpoint group of the APIs this app serves. Started by
// functions/index.ts (tsc's per-file build, `func start` from sources) or by the deployed bundle's entry
// (functions/bundle-entry.ts), which loads it with V8's code cache.
import { startTelemetry } from '../shared/telemetry/setup.js';
import { loadConfig } from '../shared/config.js';
import { registerHost } from '../shared/http/azure-host.js';
import { createServices, type Services } from '../shared/services.js';
import { VERSION } from '../shared/version.js';
import { QUEUE_HANDLERS, ROUTES, TIMERS } from './groups.js';

export async function startApp(): Promise<void> {
  const config = loadConfig(process.env, VERSION);
  await startTelemetry(config);

  let services: Promise<Services> | undefined;
  const getServices = () => (services ??= createServices(config));

  // One Function App per API in Azure (SERVICE_APIS); the async worker runs beside the Core API.
  registerHost(ROUTES, QUEUE_HANDLERS, TIMERS, config, getServices);
}
