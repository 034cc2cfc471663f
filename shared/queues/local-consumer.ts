// The standalone server's queue trigger: polls a Storage queue (Azurite locally) with the same delivery
// rules as the Functions host: visibility timeout, dequeue count, and a poison queue after the last try.
import type { QueueServiceClient } from '@azure/storage-queue';
import { toError } from '../http/errors.js';
import type { Services } from '../services.js';
import { decodeMessage, MAX_DEQUEUE_COUNT, type QueueHandler } from './handler.js';

export interface ConsumerOptions {
  visibilityTimeoutSeconds?: number;
  idlePollMs?: number;
  batchSize?: number;
}

export interface Consumer {
  wake(): void;
  stop(): Promise<void>;
}

export function startQueueConsumer(
  handler: QueueHandler,
  queues: QueueServiceClient,
  services: Services,
  options: ConsumerOptions = {},
): Consumer {
  const queue = handler.queue(services.config);
  const client = queues.getQueueClient(queue);
  const poison = queues.getQueueClient(`${queue}-poison`);
  const idle = options.idlePollMs ?? 1000;
  let stopped = false;
  // A function, not a read of the flag: the flag changes while the loop awaits.
  const running = () => !stopped;
  let wakeUp: (() => void) | undefined;

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wakeUp = () => {
        clearTimeout(timer);
        resolve();
      };
    });

  const toPoison = async (m: { messageId: string; popReceipt: string; messageText: string }) => {
    await poison.createIfNotExists();
    await poison.sendMessage(m.messageText);
    await client.deleteMessage(m.messageId, m.popReceipt);
  };

  async function deliver(m: { messageId: string; popReceipt: string; messageText: string; dequeueCount: number }) {
    // Delivered more often than allowed (the worker died mid-try): straight to poison, as the Functions host does.
    if (m.dequeueCount > MAX_DEQUEUE_COUNT) {
      await toPoison(m);
      return;
    }
    try {
      await handler.handler(decodeMessage(m.messageText), { id: m.messageId, dequeueCount: m.dequeueCount }, services);
      await client.deleteMessage(m.messageId, m.popReceipt);
    } catch (thrown) {
      services.log.warn('Queue message failed', { queue, id: m.messageId, dequeueCount: m.dequeueCount, error: toError(thrown).message });
      if (m.dequeueCount >= MAX_DEQUEUE_COUNT) await toPoison(m);
    }
  }

  const loop = (async () => {
    await client.createIfNotExists();
    while (running()) {
      let received = 0;
      try {
        const { receivedMessageItems } = await client.receiveMessages({
          numberOfMessages: options.batchSize ?? 16,
          visibilityTimeout: options.visibilityTimeoutSeconds ?? 60,
        });
        received = receivedMessageItems.length;
        await Promise.all(receivedMessageItems.map(deliver));
      } catch (thrown) {
        if (running()) services.log.warn('Queue poll failed', { queue, error: toError(thrown).message });
      }
      if (received === 0 && running()) await sleep(idle);
    }
  })();

  return {
    wake: () => wakeUp?.(),
    async stop() {
      stopped = true;
      wakeUp?.();
      await loop.catch(() => undefined);
    },
  };
}
