// Queue-triggered work, declared once: the Functions host binds it to a queue trigger, the standalone
// server to the local consumer. Both deliver at least once.
import type { z } from 'zod';
import type { Config } from '../config.js';
import type { Services } from '../services.js';
import type { QueueDelivery } from './producer.js';

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

export const queueName = (config: Config, ref: QueueRef): string =>
  `${QUEUE_SETTINGS[ref.of](config)}${ref.poison ? '-poison' : ''}`;

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
      services.log.warn('Queue message dropped: it is not a message this queue takes', {
        handler: definition.name,
        id: delivery.id,
        problem: parsed.error.issues[0]?.message ?? 'invalid',
      });
    },
  };
}
