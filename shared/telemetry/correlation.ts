// Telemetry correlation of completions: OperationId, InstanceId, ConversationId and Protocol travel as W3C
// baggage; every span and log record carries them as Svc-* dimensions; the UPN only on boundary spans.
import { context, propagation, trace, type Context, type Link, type Span, type SpanContext } from '@opentelemetry/api';
import type { ReadableSpan, SpanProcessor } from '@opentelemetry/sdk-trace-base';

/** Baggage entry -> span attribute / log dimension. */
export const DIMENSIONS = {
  OperationId: 'Svc-OperationId',
  InstanceId: 'Svc-InstanceId',
  ConversationId: 'Svc-ConversationId',
  Protocol: 'Svc-Protocol',
} as const;

export interface CorrelationIds {
  operationId: string;
  instanceId: string;
  conversationId?: string | undefined;
  /** How a completion came in (core, openai, mcp, a2a). */
  protocol?: string | undefined;
}

/** The Svc-* dimensions of a context's baggage. */
export function dimensionsOf(ctx: Context = context.active()): Record<string, string> {
  const bag = propagation.getBaggage(ctx);
  const out: Record<string, string> = {};
  if (!bag) return out;
  for (const [key, attribute] of Object.entries(DIMENSIONS)) {
    const value = bag.getEntry(key)?.value;
    if (value) out[attribute] = value;
  }
  return out;
}

/** Copies the baggage of the parent context onto every span as it starts, in any service. */
export class BaggageSpanProcessor implements SpanProcessor {
  onStart(span: Span, parentContext: Context): void {
    span.setAttributes(dimensionsOf(parentContext));
  }
  onEnd(_span: ReadableSpan): void {
    // nothing to do at the end
  }
  forceFlush(): Promise<void> {
    return Promise.resolve();
  }
  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}

/**
 * Runs `fn` with the correlation ids as baggage, and tags the active (boundary) span with them and with
 * the caller's UPN, which is never put in baggage.
 */
export function withCorrelation<T>(ids: CorrelationIds, upn: string | undefined, fn: () => Promise<T>): Promise<T> {
  const entries: Record<string, { value: string }> = {
    OperationId: { value: ids.operationId },
    InstanceId: { value: ids.instanceId },
  };
  if (ids.conversationId) entries.ConversationId = { value: ids.conversationId };
  if (ids.protocol) entries.Protocol = { value: ids.protocol };
  const ctx = propagation.setBaggage(context.active(), propagation.createBaggage(entries));
  const boundary = trace.getActiveSpan();
  boundary?.setAttributes({ ...dimensionsOf(ctx), ...(upn ? { 'Svc-UPN': upn } : {}) });
  return context.with(ctx, fn);
}

/** The W3C trace context of the active span, to save with a long-running operation. */
export function saveTraceContext(): { traceparent?: string; tracestate?: string } {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier, {
    set: (c, k, v) => {
      if (k === 'traceparent' || k === 'tracestate') c[k] = v;
    },
  });
  return carrier;
}

/** A link to a saved or incoming W3C trace context, when it holds a valid one. */
export function linkTo(carrier: Record<string, string | undefined>): Link[] {
  const extracted = propagation.extract(context.active(), carrier, {
    get: (c, k) => c[k],
    keys: (c) => Object.keys(c),
  });
  const spanContext: SpanContext | undefined = trace.getSpanContext(extracted);
  return spanContext && trace.isSpanContextValid(spanContext) ? [{ context: spanContext }] : [];
}
