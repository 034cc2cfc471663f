// The Azure Functions app: telemetry first, then every endpoint group of the APIs this app serves. Started by
// functions/index.ts (tsc's per-file build, `func start` from sources). The deployed bundle starts
// functions/bundled-app.ts instead, which loads each group on first use.
import { loadedFunctions, registerHost } from '../shared/http/azure-host.js';
import { QUEUE_HANDLERS, ROUTES, TIMERS } from './groups.js';
import { openApp } from './open-app.js';

export async function startApp(): Promise<void> {
  const { config, services } = await openApp();
  // One Function App per API in Azure (SERVICE_APIS); the async worker runs beside the Core API.
  registerHost(loadedFunctions(ROUTES, QUEUE_HANDLERS, TIMERS), { config, services });
}
