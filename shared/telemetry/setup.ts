// Telemetry bootstrap, loaded before anything else. Always: an AsyncLocalStorage context manager and the W3C
// trace-context and baggage propagators, so correlation ids reach every downstream call. With
// APPLICATIONINSIGHTS_CONNECTION_STRING: Azure Monitor export, with the baggage span processor. With
// OTEL_EXPORTER_OTLP_ENDPOINT: traces and metrics to any OpenTelemetry collector over OTLP/HTTP (as well).
import { context, metrics, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import type { MetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, SimpleSpanProcessor, type SpanExporter, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { CredentialGate } from '../net/credential-gate.js';
import type { Config } from '../config.js';
import { BaggageSpanProcessor } from './correlation.js';
import { resetMetrics } from './metrics.js';

let started = false;

/** The ingestion endpoint a connection string names (Application Insights' default when it names none). */
const ingestionEndpoint = (connectionString: string) =>
  /(?:^|;)\s*IngestionEndpoint=([^;]+)/i.exec(connectionString)?.[1]?.trim() ?? 'https://dc.services.visualstudio.com';

function registerContext(): void {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] }));
}

type TelemetryConfig = Pick<Config, 'appInsightsConnectionString' | 'azureClientId' | 'otlp' | 'version'>;

/** Flushes what is buffered and stops exporting; set by startTelemetry when something exports. */
let shutdown: () => Promise<void> = async () => {};

/** The OTLP pipeline: a batching span processor and a periodic metric reader, both the SDK's own exporters. */
async function otlpPipeline(otlp: NonNullable<Config['otlp']>): Promise<{ spans: SpanProcessor; metrics: MetricReader }> {
  const [{ OTLPTraceExporter }, { OTLPMetricExporter }, { BatchSpanProcessor }, { PeriodicExportingMetricReader }] = await Promise.all([
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/exporter-metrics-otlp-http'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/sdk-metrics'),
  ]);
  // No url: the exporters read OTEL_EXPORTER_OTLP_ENDPOINT (adding /v1/traces, /v1/metrics), the per-signal
  // endpoints and OTEL_EXPORTER_OTLP_HEADERS as the specification says.
  return {
    spans: new BatchSpanProcessor(new OTLPTraceExporter()),
    metrics: new PeriodicExportingMetricReader({ exporter: new OTLPMetricExporter(), exportIntervalMillis: otlp.metricIntervalMs, exportTimeoutMillis: Math.min(30_000, otlp.metricIntervalMs) }),
  };
}

/**
 * Starts telemetry once; returns whether anything is exported. Loads exporters only when configured.
 * Application Insights accepts Entra ID ingestion only (local authentication is off), so its exporter signs
 * in with the app's managed identity (AZURE_CLIENT_ID), which holds Monitoring Metrics Publisher.
 */
export async function startTelemetry(config: TelemetryConfig): Promise<boolean> {
  const exporting = config.appInsightsConnectionString !== undefined || config.otlp !== undefined;
  if (started) return exporting;
  started = true;
  const otlp = config.otlp ? await otlpPipeline(config.otlp) : undefined;
  if (config.appInsightsConnectionString) {
    const { useAzureMonitor, shutdownAzureMonitor } = await import('applicationinsights');
    // Through the gate: a Monitor token only, and only for an Azure Monitor ingestion endpoint.
    const gate = new CredentialGate({ serviceAudience: '', serviceHosts: [], clientId: config.azureClientId });
    const credential = gate.credentialFor('monitor', ingestionEndpoint(config.appInsightsConnectionString));
    useAzureMonitor({
      azureMonitorExporterOptions: { connectionString: config.appInsightsConnectionString, credential },
      spanProcessors: [new BaggageSpanProcessor(), ...(otlp ? [otlp.spans] : [])],
      ...(otlp ? { metricReaders: [otlp.metrics] } : {}),
    });
    shutdown = shutdownAzureMonitor;
  } else {
    registerContext();
    if (otlp && config.otlp) {
      const [{ MeterProvider }, { resourceFromAttributes, detectResources, envDetector }] = await Promise.all([import('@opentelemetry/sdk-metrics'), import('@opentelemetry/resources')]);
      // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (the environment detector) win over the defaults.
      const resource = resourceFromAttributes({ 'service.name': config.otlp.serviceName, 'service.version': config.version }).merge(detectResources({ detectors: [envDetector] }));
      const tracer = new BasicTracerProvider({ resource, spanProcessors: [new BaggageSpanProcessor(), otlp.spans] });
      const meter = new MeterProvider({ resource, readers: [otlp.metrics] });
      trace.setGlobalTracerProvider(tracer);
      metrics.setGlobalMeterProvider(meter);
      shutdown = async () => {
        await Promise.allSettled([tracer.shutdown(), meter.shutdown()]);
      };
    }
  }
  resetMetrics();
  return exporting;
}

/** Exports what is still buffered (the last spans and metrics) and stops; call once, at shutdown. */
export function stopTelemetry(): Promise<void> {
  return shutdown();
}

/** In-process tracing to an exporter (tests, and local diagnosis): same processors as in Azure. */
export function startLocalTracing(exporter: SpanExporter): () => void {
  // Not trace.disable(): it would orphan the tracers modules took at load time.
  context.disable();
  propagation.disable();
  registerContext();
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new BaggageSpanProcessor(), new SimpleSpanProcessor(exporter)] }));
  started = true;
  return () => trace.disable();
}
