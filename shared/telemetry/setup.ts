// Telemetry bootstrap, loaded before anything else. Always: an AsyncLocalStorage context manager and the W3C
// trace-context and baggage propagators, so correlation ids reach every downstream call. With
// APPLICATIONINSIGHTS_CONNECTION_STRING: Azure Monitor export, with the baggage span processor.
import { DefaultAzureCredential, ManagedIdentityCredential } from '@azure/identity';
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, SimpleSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { Config } from '../config.js';
import { BaggageSpanProcessor } from './correlation.js';

let started = false;

function registerContext(): void {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] }));
}

/**
 * Starts telemetry once; returns whether traces are exported. Loads the Azure Monitor SDK only when needed.
 * Application Insights accepts Entra ID ingestion only (local authentication is off), so the exporter signs
 * in with the app's managed identity (AZURE_CLIENT_ID), which holds Monitoring Metrics Publisher.
 */
export async function startTelemetry(config: Pick<Config, 'appInsightsConnectionString' | 'azureClientId'>): Promise<boolean> {
  if (started) return config.appInsightsConnectionString !== undefined;
  started = true;
  if (!config.appInsightsConnectionString) {
    registerContext();
    return false;
  }
  const { useAzureMonitor } = await import('applicationinsights');
  const credential = config.azureClientId ? new ManagedIdentityCredential({ clientId: config.azureClientId }) : new DefaultAzureCredential();
  useAzureMonitor({
    azureMonitorExporterOptions: { connectionString: config.appInsightsConnectionString, credential },
    spanProcessors: [new BaggageSpanProcessor()],
  });
  return true;
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
