// Application Insights takes Entra ID ingestion only: the exporter must sign in with the app's identity,
// through the credential gate (a Monitor token only, for the connection string's ingestion endpoint).
import { describe, expect, it, vi } from 'vitest';

const useAzureMonitor = vi.fn();
vi.mock('applicationinsights', () => ({ useAzureMonitor, shutdownAzureMonitor: vi.fn() }));

describe('telemetry start-up', () => {
  it("exports to Application Insights with the app's managed identity", async () => {
    const { startTelemetry } = await import('../../../../shared/telemetry/setup.js');
    const exporting = await startTelemetry({ appInsightsConnectionString: 'InstrumentationKey=00000000-0000-0000-0000-000000000000;IngestionEndpoint=https://x.in.applicationinsights.azure.com/', azureClientId: '11111111-2222-3333-4444-555555555555', otlp: undefined, version: 'test' });
    expect(exporting).toBe(true);
    const options = useAzureMonitor.mock.calls[0]?.[0] as { azureMonitorExporterOptions: { connectionString: string; credential: unknown } };
    expect(options.azureMonitorExporterOptions.connectionString).toContain('InstrumentationKey=');
    const credential = options.azureMonitorExporterOptions.credential as { getToken?: unknown };
    expect(typeof credential.getToken).toBe('function');
  });
});
