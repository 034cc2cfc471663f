// Telemetry bootstrap, loaded before anything else. Always: an AsyncLocalStorage context manager and the W3C
// trace-context and baggage propagators, so correlation ids reach every downstream call. With
// APPLICATIONINSIGHTS_CONNECTION_STRING: spans and metrics to Azure Monitor through its OpenTelemetry exporters.
// With OTEL_EXPORTER_OTLP_ENDPOINT: to any OpenTelemetry collector over OTLP/HTTP (as well). The exporters
// load only then (exporters.ts). The service makes its own spans (request, model call, queued work), so no
// auto-instrumentation is loaded: it would patch modules at start, a cold start's cost, for spans it has.
import { context, propagation } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
// The propagators from their own modules: @opentelemetry/core's entry also loads its platform module, whose
// SDK description loads the semantic conventions' thousands of constants, at every cold start.
import { W3CBaggagePropagator } from '@opentelemetry/core/build/src/baggage/propagation/W3CBaggagePropagator.js';
import { CompositePropagator } from '@opentelemetry/core/build/src/propagation/composite.js';
import { W3CTraceContextPropagator } from '@opentelemetry/core/build/src/trace/W3CTraceContextPropagator.js';
import type { TelemetryConfig } from './exporters.js';
import { resetMetrics } from './metrics.js';

let started = false;

/** Sets the context manager and the propagators (again, after a test's context.disable()). */
export function registerContext(): void {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(
    new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] }),
  );
}

/** Flushes what is buffered and stops exporting; set by startTelemetry when something exports. */
let shutdown: () => Promise<void> = async () => {};

/** Starts telemetry once; returns whether anything is exported. */
export async function startTelemetry(config: TelemetryConfig): Promise<boolean> {
  const exporting = config.appInsightsConnectionString !== undefined || config.otlp !== undefined;
  if (started) return exporting;
  started = true;
  registerContext();
  if (exporting) shutdown = (await import('./exporters.js')).startExporting(config);
  resetMetrics();
  return exporting;
}

/** Exports what is still buffered (the last spans and metrics) and stops; call once, at shutdown. */
export function stopTelemetry(): Promise<void> {
  return shutdown();
}

/** Marks telemetry started, so that startTelemetry leaves what a test registered in place. */
export function markTelemetryStarted(): void {
  started = true;
}
