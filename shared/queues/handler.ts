// Queue-triggered work, declared once: the Functions host binds it to a queue trigger, the standalone
// server to the local consumer. Both deliver at least once.
import type { z } from 'zod';
import type { Config } from '../config.js';
import type { QueueService } from '../store/storage.js';
import type { Services } from '../services.js';
import type { QueueReading } from '../telemetry/metrics.js';

export interface QueueDelivery {
  id: string;
  /** 1 on the first delivery; the message is given up after MAX_DEQUEUE_COUNT. */
  dequeueCount: number;
  /** Aborted when the worker shuts down: the handler stops, and the message comes back for another worker. */
  signal?: AbortSignal;
}

/** The queues by what they carry, each named by a setting (several instances may share one storage account). */
const QUEUE_SETTINGS = {
  completions: (config: Config) => config.asyncQueue,
  webhooks: (config: Config) => config.webhooks.queue,
  pipelines: (config: Config) => config.knowledge.queue,
  pipelineEvents: (config: Config) => config.knowledge.eventsQueue,
  evaluations: (config: Config) => config.evaluationsQueue,
} as const;

/**
 * A queue as data (the deployed Functions bundle registers its queue triggers from a table the build
 * wrote): one of the configured queues, or its poison queue (`<name>-poison`).
 */
export interface QueueRef {
  of: keyof typeof QUEUE_SETTINGS;
  poison?: true;
}

export const queueName = (config: Config, ref: QueueRef): string => `${QUEUE_SETTINGS[ref.of](config)}${ref.poison ? '-poison' : ''}`;

export interface QueueHandler {
  /** Function name: `<group>-<action>`. */
  name: string;
  queue: QueueRef;
  /** Handles one delivery of a message as it was queued: parsed by the handler's schema first. */
  run: (message: unknown, delivery: QueueDelivery, services: Services) => Promise<void>;
  /** Messages handled at once by the standalone server's consumer (default 8): more for work that mostly waits. */
  concurrency?: number;
}

/**
 * A queue handler whose messages are checked by a schema, like request bodies: the handler sees the typed
 * message; one that does not parse is logged and dropped (no later delivery would parse either).
 */
export function queueHandler<S extends z.ZodType>(definition: {
  name: string;
  queue: QueueRef;
  message: S;
  handler: (message: z.output<S>, delivery: QueueDelivery, services: Services) => Promise<void>;
  concurrency?: number;
}): QueueHandler {
  const { message: schema, handler, ...rest } = definition;
  return {
    ...rest,
    run: async (message, delivery, services) => {
      const parsed = schema.safeParse(message);
      if (parsed.success) return handler(parsed.data, delivery, services);
      services.log.warn('Queue message dropped: it is not a message this queue takes', { handler: definition.name, id: delivery.id, problem: parsed.error.issues[0]?.message ?? 'invalid' });
    },
  };
}

/** Deliveries before a message moves to `<queue>-poison` (host.json `extensions.queues.maxDequeueCount`). */
export const MAX_DEQUEUE_COUNT = 5;

/** Messages are base64-encoded JSON: the Functions queue trigger's default encoding. */
export const encodeMessage = (message: unknown) => Buffer.from(JSON.stringify(message)).toString('base64');
export const decodeMessage = (text: string): unknown => JSON.parse(Buffer.from(text, 'base64').toString('utf8'));

/** Sends messages, creating each queue on first use. */
/** A queue's depth and the age of its oldest visible message (zero when empty), for the queue gauges. */
export async function readQueue(service: QueueService, name: string): Promise<QueueReading> {
  const client = (await service()).getQueueClient(name);
  const [properties, peeked] = await Promise.all([client.getProperties(), client.peekMessages({ numberOfMessages: 1 })]);
  const oldest = peeked.peekedMessageItems[0]?.insertedOn;
  return { depth: properties.approximateMessagesCount ?? 0, oldestAgeSeconds: oldest ? Math.max(0, (Date.now() - oldest.getTime()) / 1000) : 0 };
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
