// In-process tracing to an exporter, for tests and local diagnosis: the processors Azure runs, spans kept in
// memory. Its own module: the tracing SDK it loads has no place in a cold start.
import { context, propagation, trace } from '@opentelemetry/api';
import { BasicTracerProvider, SimpleSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { BaggageSpanProcessor } from './correlation.js';
import { markTelemetryStarted, registerContext } from './setup.js';

/** In-process tracing to an exporter (tests, and local diagnosis): same processors as in Azure. */
export function startLocalTracing(exporter: SpanExporter): () => void {
  // Not trace.disable(): it would orphan the tracers modules took at load time.
  context.disable();
  propagation.disable();
  registerContext();
  trace.setGlobalTracerProvider(
    new BasicTracerProvider({ spanProcessors: [new BaggageSpanProcessor(), new SimpleSpanProcessor(exporter)] }),
  );
  markTelemetryStarted();
  return () => trace.disable();
}
