// Application Insights takes Entra ID ingestion only: the exporters must sign in with the app's identity,
// through the credential gate (a Monitor token only, for the connection string's ingestion endpoint), and the
// service's spans must reach them.
import { trace } from '@opentelemetry/api';
import { ExportResultCode } from '@opentelemetry/core';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it, vi } from 'vitest';

const exported: ReadableSpan[] = [];
const options: { connectionString: string; credential: { getToken?: unknown } }[] = [];
vi.mock('@azure/monitor-opentelemetry-exporter', () => ({
  AzureMonitorTraceExporter: class {
    constructor(o: (typeof options)[number]) {
      options.push(o);
    }
    export(spans: ReadableSpan[], done: (r: { code: number }) => void) {
      exported.push(...spans);
      done({ code: ExportResultCode.SUCCESS });
    }
    shutdown() {
      return Promise.resolve();
    }
  },
  AzureMonitorMetricExporter: class {
    export(_m: unknown, done: (r: { code: number }) => void) {
      done({ code: ExportResultCode.SUCCESS });
    }
    forceFlush() {
      return Promise.resolve();
    }
    shutdown() {
      return Promise.resolve();
    }
  },
}));

describe('telemetry start-up', () => {
  it("exports the service's spans to Application Insights with the app's managed identity", async () => {
    const { startTelemetry, stopTelemetry } = await import('../../../../shared/telemetry/setup.js');
    const exporting = await startTelemetry({
      appInsightsConnectionString:
        'InstrumentationKey=00000000-0000-0000-0000-000000000000;' +
        'IngestionEndpoint=https://x.in.applicationinsights.azure.com/',
      azureClientId: '11111111-2222-3333-4444-555555555555',
      otlp: undefined,
      version: 'test',
    });
    expect(exporting).toBe(true);
    expect(options[0]?.connectionString).toContain('InstrumentationKey=');
    expect(typeof options[0]?.credential.getToken).toBe('function');
    trace.getTracer('test').startSpan('GET /status').end();
    await stopTelemetry();
    expect(exported.map((s) => s.name)).toEqual(['GET /status']);
    expect(exported[0]?.resource.attributes['service.version']).toBe('test');
  });
});
