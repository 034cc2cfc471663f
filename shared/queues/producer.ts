// Queue messages as the features see them: a delivery being handled, sending messages (the storage queues,
// or a list in memory in tests), their encoding, and a queue's depth. Below the handlers' registration
// (handler.ts), so a feature that sends or handles messages needs nothing of the hosts.
import type { Config } from '../config.js';
import type { QueueService } from '../store/storage.js';
import type { WebhookMessage } from './messages.js';
import type { QueueReading } from '../telemetry/metrics.js';

export interface QueueDelivery {
  id: string;
  /** 1 on the first delivery; the message is given up after MAX_DEQUEUE_COUNT. */
  dequeueCount: number;
  /** Aborted when the worker shuts down: the handler stops, and the message comes back for another worker. */
  signal?: AbortSignal;
}

/** Deliveries before a message moves to `<queue>-poison` (host.json `extensions.queues.maxDequeueCount`). */
export const MAX_DEQUEUE_COUNT = 5;

/** Messages are base64-encoded JSON: the Functions queue trigger's default encoding. */
export const encodeMessage = (message: unknown) => Buffer.from(JSON.stringify(message)).toString('base64');
export const decodeMessage = (text: string): unknown => JSON.parse(Buffer.from(text, 'base64').toString('utf8'));

/** A queue's depth and the age of its oldest visible message (zero when empty), for the queue gauges. */
export async function readQueue(service: QueueService, name: string): Promise<QueueReading> {
  const client = (await service()).getQueueClient(name);
  const [properties, peeked] = await Promise.all([
    client.getProperties(),
    client.peekMessages({ numberOfMessages: 1 }),
  ]);
  const oldest = peeked.peekedMessageItems[0]?.insertedOn;
  return {
    depth: properties.approximateMessagesCount ?? 0,
    oldestAgeSeconds: oldest ? Math.max(0, (Date.now() - oldest.getTime()) / 1000) : 0,
  };
}

/** Sends queue messages: the storage queues, or (tests that run the service in process) a list in memory. */
export interface Producer {
  send(queue: string, message: unknown, options?: { visibilityTimeoutSeconds?: number }): Promise<void>;
  /** Lets an in-process consumer wake at once instead of at its next poll. */
  onSend(listener: (queue: string) => void): () => void;
}

export class QueueProducer implements Producer {
  private readonly ready = new Map<string, Promise<unknown>>();
  private readonly listeners = new Set<(queue: string) => void>();

  constructor(private readonly service: QueueService) {}

  async send(queue: string, message: unknown, options: { visibilityTimeoutSeconds?: number } = {}): Promise<void> {
    const client = (await this.service()).getQueueClient(queue);
    let ready = this.ready.get(queue);
    if (!ready) {
      ready = client.createIfNotExists();
      this.ready.set(queue, ready);
    }
    await ready;
    await client.sendMessage(encodeMessage(message), {
      ...(options.visibilityTimeoutSeconds ? { visibilityTimeout: options.visibilityTimeoutSeconds } : {}),
    });
    for (const listener of this.listeners) listener(queue);
  }

  /** Lets an in-process consumer wake at once instead of at its next poll. */
  onSend(listener: (queue: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

/** Queues the first webhook delivery of an operation that ends (now, or after `delaySeconds` for one about to end). */
export function enqueueDelivery(
  s: { readonly config: Config; readonly producer: Producer },
  key: string,
  delaySeconds?: number,
): Promise<void> {
  return s.producer.send(
    s.config.webhooks.queue,
    { key, attempt: 1 } satisfies WebhookMessage,
    delaySeconds ? { visibilityTimeoutSeconds: delaySeconds } : {},
  );
}
