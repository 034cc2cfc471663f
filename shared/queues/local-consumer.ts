// The standalone server's queue trigger: polls a Storage queue (Azurite locally) with the delivery rules of
// the Functions host: dequeue count, retries, and a poison queue after the last try. Each message is handled
// on its own (a slow one never holds up the others), holds a short lease renewed while it runs (a killed
// worker's message is back within one lease), and stop() returns within a bounded time.
import type { QueueServiceClient } from '@azure/storage-queue';
import { toError } from '../errors.js';
import type { Services } from '../services.js';
import { queueName, type QueueHandler } from './handler.js';
import { decodeMessage, MAX_DEQUEUE_COUNT } from './producer.js';

export interface ConsumerOptions {
  /** Lease on a taken message, seconds; renewed at a third of it while the handler runs. */
  visibilityTimeoutSeconds?: number;
  /** The wait after a poll that found nothing; each further empty poll doubles it, up to maxIdlePollMs. */
  idlePollMs?: number;
  /**
   * The longest wait between polls of an idle queue (as the Functions host's queue trigger backs off, to a
   * minute by default). A message taken, a retry falling due, or a wake (a message this process sent)
   * starts over from idlePollMs: an idle instance then costs a poll per queue every few seconds, not two a second.
   */
  maxIdlePollMs?: number;
  /** Messages handled at once. */
  concurrency?: number;
}

export interface Consumer {
  wake(): void;
  /** Stops taking messages, lets running ones finish for `graceMs`, then aborts them (their messages return). */
  stop(graceMs?: number): Promise<void>;
}

interface Taken {
  messageId: string;
  popReceipt: string;
  messageText: string;
  dequeueCount: number;
}

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

export function startQueueConsumer(
  handler: QueueHandler,
  queues: QueueServiceClient,
  services: Services,
  options: ConsumerOptions = {},
): Consumer {
  const queue = queueName(services.config, handler.queue);
  const client = queues.getQueueClient(queue);
  const poison = queues.getQueueClient(`${queue}-poison`);
  const idle = options.idlePollMs ?? 1000;
  const maxIdle = Math.max(idle, options.maxIdlePollMs ?? 10_000);
  let wait = idle;
  const lease = options.visibilityTimeoutSeconds ?? 30;
  const concurrency = options.concurrency ?? 8;
  const shutdown = new AbortController();
  const inFlight = new Set<Promise<void>>();
  let stopped = false;
  // A function, not a read of the flag: the flag changes while the loop awaits.
  const running = () => !stopped;
  let wakeUp: (() => void) | undefined;
  /** Polls again at once, and soon after while idle. */
  const wake = () => {
    wait = idle;
    wakeUp?.();
  };

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wakeUp = () => {
        clearTimeout(timer);
        resolve();
      };
    });

  const toPoison = async (m: Taken) => {
    await poison.createIfNotExists();
    await poison.sendMessage(m.messageText);
    await client.deleteMessage(m.messageId, m.popReceipt);
    services.log.warn('Queue message poisoned', { queue, id: m.messageId, dequeueCount: m.dequeueCount });
  };

  async function deliver(m: Taken): Promise<void> {
    // Delivered more often than allowed (a worker died mid-try): straight to poison, as the Functions host does.
    if (m.dequeueCount > MAX_DEQUEUE_COUNT) return toPoison(m);
    // The lease is renewed while the handler runs; each renewal gives a new pop receipt.
    const renew = setInterval(
      () => {
        client.updateMessage(m.messageId, m.popReceipt, undefined, lease).then(
          (r) => (m.popReceipt = r.popReceipt ?? m.popReceipt),
          (e: unknown) =>
            services.log.warn('Queue lease renewal failed', { queue, id: m.messageId, error: toError(e).message }),
        );
      },
      (lease * 1000) / 3,
    );
    const started = Date.now();
    services.log.info('Queue message taken', { queue, id: m.messageId, dequeueCount: m.dequeueCount });
    try {
      await handler.run(
        decodeMessage(m.messageText),
        { id: m.messageId, dequeueCount: m.dequeueCount, signal: shutdown.signal },
        services,
      );
      clearInterval(renew);
      await client.deleteMessage(m.messageId, m.popReceipt);
      services.log.info('Queue message completed', { queue, id: m.messageId, duration_ms: Date.now() - started });
    } catch (thrown) {
      clearInterval(renew);
      // Interrupted by shutdown: the message reappears when its lease lapses and another worker resumes it.
      if (shutdown.signal.aborted) return;
      services.log.warn('Queue message failed', {
        queue,
        id: m.messageId,
        dequeueCount: m.dequeueCount,
        retry: m.dequeueCount < MAX_DEQUEUE_COUNT,
        error: toError(thrown).message,
      });
      if (m.dequeueCount >= MAX_DEQUEUE_COUNT) return toPoison(m);
      // Retry with a growing delay, never longer than a lease; polled for when it falls due.
      const retryIn = Math.min(lease, 2 ** m.dequeueCount);
      await client.updateMessage(m.messageId, m.popReceipt, undefined, retryIn);
      setTimeout(() => running() && wake(), retryIn * 1000).unref();
    }
  }

  const loop = (async () => {
    await client
      .createIfNotExists()
      .catch((e: unknown) => services.log.warn('Queue not reachable', { queue, error: toError(e).message }));
    while (running()) {
      const free = concurrency - inFlight.size;
      let received = 0;
      if (free > 0) {
        try {
          const { receivedMessageItems } = await client.receiveMessages({
            numberOfMessages: Math.min(32, free),
            visibilityTimeout: lease,
          });
          received = receivedMessageItems.length;
          for (const m of receivedMessageItems) {
            const task: Promise<void> = deliver(m)
              .catch((e: unknown) =>
                services.log.warn('Queue delivery failed', { queue, id: m.messageId, error: toError(e).message }),
              )
              .finally(() => {
                inFlight.delete(task);
                wake();
              });
            inFlight.add(task);
          }
        } catch (thrown) {
          if (running()) services.log.warn('Queue poll failed', { queue, error: toError(thrown).message });
        }
      }
      if (received > 0) wait = idle;
      if ((received === 0 || inFlight.size >= concurrency) && running()) {
        const slept = wait;
        await sleep(slept);
        // Nothing came, and nothing woke it meanwhile: the next wait is longer.
        if (received === 0 && wait === slept) wait = Math.min(maxIdle, wait * 2);
      }
    }
  })();

  return {
    wake,
    async stop(graceMs = 5000) {
      stopped = true;
      wakeUp?.();
      await loop.catch(() => undefined);
      const settled = () => Promise.allSettled([...inFlight]).then(() => undefined);
      await Promise.race([settled(), delay(graceMs)]);
      shutdown.abort();
      await Promise.race([settled(), delay(1000)]);
    },
  };
}
