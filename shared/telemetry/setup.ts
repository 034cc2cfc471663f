// Telemetry bootstrap, loaded before anything else: Azure Monitor (Application Insights) tracing when a
// connection string is configured; otherwise the OpenTelemetry API stays a no-op.
import type { Config } from '../config.js';

let started = false;

/** Starts the exporter once; returns whether telemetry is exported. Loads the SDK only when needed. */
export async function startTelemetry(config: Pick<Config, 'appInsightsConnectionString'>): Promise<boolean> {
  if (started || !config.appInsightsConnectionString) return started;
  const { useAzureMonitor } = await import('applicationinsights');
  useAzureMonitor({ azureMonitorExporterOptions: { connectionString: config.appInsightsConnectionString } });
  started = true;
  return true;
}
