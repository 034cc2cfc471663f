// The service's metrics, through the OpenTelemetry metrics API: whatever meter provider telemetry set up
// (OTLP, Azure Monitor) receives them; with none, every record is a no-op. Names and attributes follow the
// OpenTelemetry semantic conventions where one exists (HTTP server, GenAI client).
import {
  metrics,
  type Attributes,
  type BatchObservableCallback,
  type Counter,
  type Histogram,
} from '@opentelemetry/api';

interface Instruments {
  requestDuration: Histogram;
  modelDuration: Histogram;
  modelTokens: Histogram;
  quotaRejections: Counter;
}

let instruments: Instruments | undefined;

/**
 * Created on first use, not at load: the metrics API has no proxy provider, so a meter taken before telemetry
 * registers its provider would stay a no-op for good.
 */
function get(): Instruments {
  if (instruments) return instruments;
  const meter = metrics.getMeter('agent-platform');
  instruments = {
    requestDuration: meter.createHistogram('http.server.request.duration', {
      unit: 's',
      description: 'Duration of HTTP requests, by route and status',
    }),
    modelDuration: meter.createHistogram('gen_ai.client.operation.duration', {
      unit: 's',
      description: 'Duration of model calls',
    }),
    modelTokens: meter.createHistogram('gen_ai.client.token.usage', {
      unit: '{token}',
      description: 'Tokens used by model calls',
    }),
    quotaRejections: meter.createCounter('svc.quota.rejections', {
      unit: '{request}',
      description: 'Completion requests refused by a quota',
    }),
  };
  return instruments;
}

/** Forgets the instruments, so the next record takes them from the provider registered now. */
export function resetMetrics(): void {
  instruments = undefined;
}

export function recordRequest(
  seconds: number,
  attributes: { method: string; route: string; name: string; status: number },
): void {
  get().requestDuration.record(seconds, {
    'http.request.method': attributes.method,
    'http.route': attributes.route,
    'svc.route.name': attributes.name,
    'http.response.status_code': attributes.status,
  });
}

export function recordModelCall(
  seconds: number,
  attributes: { operation: string; model: string; error?: string },
  tokens?: { input: number; output: number },
): void {
  const common: Attributes = {
    'gen_ai.operation.name': attributes.operation,
    'gen_ai.request.model': attributes.model,
  };
  const m = get();
  m.modelDuration.record(seconds, attributes.error ? { ...common, 'error.type': attributes.error } : common);
  if (!tokens) return;
  m.modelTokens.record(tokens.input, { ...common, 'gen_ai.token.type': 'input' });
  if (attributes.operation !== 'embeddings')
    m.modelTokens.record(tokens.output, { ...common, 'gen_ai.token.type': 'output' });
}

export function recordQuotaRejection(quota: string): void {
  get().quotaRejections.add(1, { 'svc.quota.name': quota });
}

/** What a queue gauge reads at each collection: messages waiting, and the age of the oldest (seconds). */
export interface QueueReading {
  depth: number;
  oldestAgeSeconds: number;
}

/**
 * Observes the depth and the oldest message's age of each queue, read when the metrics are collected (once
 * per export interval), never on a request. A queue that cannot be read is left out of that collection.
 */
export function observeQueues(names: readonly string[], read: (queue: string) => Promise<QueueReading>): () => void {
  const meter = metrics.getMeter('agent-platform');
  const depth = meter.createObservableGauge('svc.queue.depth', {
    unit: '{message}',
    description: 'Messages waiting in a queue',
  });
  const age = meter.createObservableGauge('svc.queue.age', {
    unit: 's',
    description: 'Age of the oldest message waiting in a queue',
  });
  const callback: BatchObservableCallback = async (observer) => {
    const readings = await Promise.allSettled(names.map(read));
    readings.forEach((r, i) => {
      if (r.status !== 'fulfilled') return;
      const attributes = { 'messaging.destination.name': names[i] ?? '' };
      observer.observe(depth, r.value.depth, attributes);
      observer.observe(age, r.value.oldestAgeSeconds, attributes);
    });
  };
  meter.addBatchObservableCallback(callback, [depth, age]);
  return () => meter.removeBatchObservableCallback(callback, [depth, age]);
}
