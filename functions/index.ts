// Azure Functions entry point: telemetry first, then every endpoint group of the APIs this app serves.
import { startTelemetry } from '../shared/telemetry/setup.js';
import { loadConfig } from '../shared/config.js';
import { registerHost } from '../shared/http/azure-host.js';
import { createServices, type Services } from '../shared/services.js';
import { VERSION } from '../shared/version.js';
import { QUEUE_HANDLERS, ROUTES, TIMERS } from './groups.js';

const config = loadConfig(process.env, VERSION);
await startTelemetry(config);

let services: Promise<Services> | undefined;
const getServices = () => (services ??= createServices(config));

// One Function App per API in Azure (SERVICE_APIS); the async worker runs beside the Core API.
registerHost(ROUTES, QUEUE_HANDLERS, TIMERS, config, getServices);
