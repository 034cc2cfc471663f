// Whether spans go anywhere: a tracer provider is registered (by telemetry set-up, a test, or OpenTelemetry's
// own auto-instrumentation). With none, the request pipeline starts no span at all: a no-op span still costs
// a context switch per request.
import { ProxyTracerProvider, trace } from '@opentelemetry/api';

export function tracingActive(): boolean {
  const provider = trace.getTracerProvider();
  // The API's global is this proxy until its next major version; a provider of another kind is a real one.
  // eslint-disable-next-line @typescript-eslint/no-deprecated
  return !(provider instanceof ProxyTracerProvider) || provider.getDelegateTracer('agent-platform') !== undefined;
}
