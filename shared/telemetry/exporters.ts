// The exporting half of telemetry, loaded only when something is exported (setup.ts imports it on demand):
// Azure Monitor's OpenTelemetry exporters and the SDK's OTLP/HTTP ones, each behind a batching span processor
// and a periodic metric reader, and the tracer and meter providers they hang on. Imported statically here so
// that the bundles keep this as one chunk with its named exports.
import { metrics, trace } from '@opentelemetry/api';
import { AzureMonitorMetricExporter, AzureMonitorTraceExporter } from '@azure/monitor-opentelemetry-exporter';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import {
  MeterProvider,
  PeriodicExportingMetricReader,
  type MetricReader,
  type PushMetricExporter,
} from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, BatchSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { CredentialGate } from '../net/credential-gate.js';
import type { Config } from '../config.js';
import { BaggageSpanProcessor } from './correlation.js';

export type TelemetryConfig = Pick<Config, 'appInsightsConnectionString' | 'azureClientId' | 'otlp' | 'version'>;

/** Where spans and metrics go: a batching span processor and a periodic metric reader over one exporter pair. */
interface Pipeline {
  spans: SpanProcessor;
  metrics: MetricReader;
}

/** How often metrics go to Azure Monitor (its distribution's default). */
const AZURE_MONITOR_METRIC_INTERVAL_MS = 60_000;

/** The ingestion endpoint a connection string names (Application Insights' default when it names none). */
const ingestionEndpoint = (connectionString: string) =>
  /(?:^|;)\s*IngestionEndpoint=([^;]+)/i.exec(connectionString)?.[1]?.trim() ?? 'https://dc.services.visualstudio.com';

const periodic = (exporter: PushMetricExporter, intervalMs: number): MetricReader =>
  new PeriodicExportingMetricReader({
    exporter,
    exportIntervalMillis: intervalMs,
    exportTimeoutMillis: Math.min(30_000, intervalMs),
  });

/**
 * OTLP: no url, so the exporters read OTEL_EXPORTER_OTLP_ENDPOINT (adding /v1/traces, /v1/metrics), the per-signal
 * endpoints and OTEL_EXPORTER_OTLP_HEADERS as the specification says.
 */
const otlpPipeline = (otlp: NonNullable<Config['otlp']>): Pipeline => ({
  spans: new BatchSpanProcessor(new OTLPTraceExporter()),
  metrics: periodic(new OTLPMetricExporter(), otlp.metricIntervalMs),
});

/**
 * Azure Monitor. Application Insights accepts Entra ID ingestion only (local authentication is off), so the
 * exporters sign in with the app's managed identity (AZURE_CLIENT_ID), which holds Monitoring Metrics
 * Publisher, through the gate: a Monitor token only, and only for an Azure Monitor ingestion endpoint.
 */
function azureMonitorPipeline(connectionString: string, clientId: string | undefined): Pipeline {
  const gate = new CredentialGate({ serviceAudience: '', serviceHosts: [], clientId });
  const options = { connectionString, credential: gate.credentialFor('monitor', ingestionEndpoint(connectionString)) };
  return {
    spans: new BatchSpanProcessor(new AzureMonitorTraceExporter(options)),
    metrics: periodic(new AzureMonitorMetricExporter(options), AZURE_MONITOR_METRIC_INTERVAL_MS),
  };
}

/** Registers providers that export to every configured destination; returns how to flush and stop them. */
export function startExporting(config: TelemetryConfig): () => Promise<void> {
  const pipelines = [
    ...(config.appInsightsConnectionString
      ? [azureMonitorPipeline(config.appInsightsConnectionString, config.azureClientId)]
      : []),
    ...(config.otlp ? [otlpPipeline(config.otlp)] : []),
  ];
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (the environment detector) win over the defaults; Azure
  // Monitor shows service.name as the cloud role.
  const serviceName = config.otlp?.serviceName ?? process.env.WEBSITE_SITE_NAME ?? 'agent-platform';
  const resource = resourceFromAttributes({ 'service.name': serviceName, 'service.version': config.version }).merge(
    detectResources({ detectors: [envDetector] }),
  );
  const tracer = new BasicTracerProvider({
    resource,
    spanProcessors: [new BaggageSpanProcessor(), ...pipelines.map((p) => p.spans)],
  });
  const meter = new MeterProvider({ resource, readers: pipelines.map((p) => p.metrics) });
  trace.setGlobalTracerProvider(tracer);
  metrics.setGlobalMeterProvider(meter);
  return async () => {
    await Promise.allSettled([tracer.shutdown(), meter.shutdown()]);
  };
}
