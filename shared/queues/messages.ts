// The messages the service queues, one schema each: a handler receives a message only after it parsed, as a
// route receives a body. A message that does not parse (written by another version, or by hand) would never
// parse on a later delivery either: it is logged and dropped.
import { z } from 'zod';

/** An async completion to run (the completions queue and its poison queue): the operation's document key. */
export const OperationMessage = z.object({ key: z.string().min(1), operation_id: z.string().optional() });
export type OperationMessage = z.output<typeof OperationMessage>;

/** A data pipeline run to execute (the pipelines queue and its poison queue): the run's id. */
export const RunMessage = z.object({ run: z.string().min(1) });
export type RunMessage = z.output<typeof RunMessage>;

/**
 * A webhook delivery of an ended operation: its attempt (1 first), how often it waited for the operation to
 * end, and an id that makes each re-queued message distinct.
 */
export const WebhookMessage = z.object({
  key: z.string().min(1),
  attempt: z.number().int().min(1).default(1),
  waits: z.number().int().min(0).default(0),
  id: z.string().optional(),
});
export type WebhookMessage = z.input<typeof WebhookMessage>;
