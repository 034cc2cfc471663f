// What both Functions apps (app.ts, bundled-app.ts) do before they register: read the settings, start
// telemetry, and make the services on the first call that needs them.
import { loadConfig, type Config } from '../shared/config.js';
import { createServices, type Services } from '../shared/services.js';
import { startTelemetry } from '../shared/telemetry/setup.js';
import { VERSION } from '../shared/version.js';

export async function openApp(): Promise<{ config: Config; services: () => Promise<Services> }> {
  const config = loadConfig(process.env, VERSION);
  await startTelemetry(config);
  let services: Promise<Services> | undefined;
  return { config, services: () => (services ??= createServices(config)) };
}
