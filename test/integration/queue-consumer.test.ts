// The local queue trigger against Azurite: delivery, messages checked by schema, retry with a growing dequeue
// count, poison queue, and polls that back off while the queue is idle.
import { randomUUID } from 'node:crypto';
import { QueueServiceClient } from '@azure/storage-queue';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { queueHandler } from '../../shared/queues/handler.js';
import { decodeMessage, MAX_DEQUEUE_COUNT, QueueProducer } from '../../shared/queues/producer.js';
import { startQueueConsumer, type Consumer } from '../../shared/queues/local-consumer.js';
import { testServices } from '../support/services.js';

const until = async (check: () => boolean, timeoutMs = 20_000) => {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
};

describe('local queue consumer', () => {
  const queues = QueueServiceClient.fromConnectionString(inject('storageConnectionString'));
  let consumer: Consumer | undefined;
  afterEach(() => consumer?.stop());
  const untilEmpty = async (queue: string) => {
    const end = Date.now() + 10_000;
    while ((await queues.getQueueClient(queue).getProperties()).approximateMessagesCount !== 0) {
      if (Date.now() > end) throw new Error(`queue ${queue} did not empty`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  it('delivers each message once when the handler succeeds, and deletes it', async () => {
    const queue = `q-${randomUUID()}`;
    const s = await testServices({ env: { ASYNC_COMPLETIONS_QUEUE: queue } });
    const seen: unknown[] = [];
    const handler = queueHandler({
      name: 'test-ok',
      queue: { of: 'completions' },
      message: z.object({ n: z.number() }),
      handler: (m) => Promise.resolve(void seen.push(m)),
    });
    const producer = new QueueProducer(() => Promise.resolve(queues));
    consumer = startQueueConsumer(handler, queues, s, { idlePollMs: 50 });
    await producer.send(queue, { n: 1 });
    await producer.send(queue, { n: 2 });
    await until(() => seen.length === 2);
    expect(seen).toEqual(expect.arrayContaining([{ n: 1 }, { n: 2 }]));
    // Deleted after the handler returns: the queue empties right after, not at the same instant.
    await untilEmpty(queue);
    expect(seen).toHaveLength(2);
  });

  it('drops a message its schema refuses: the handler never sees it, and it is not delivered again', async () => {
    const queue = `q-${randomUUID()}`;
    const s = await testServices({ env: { ASYNC_COMPLETIONS_QUEUE: queue } });
    const seen: unknown[] = [];
    const handler = queueHandler({
      name: 'test-schema',
      queue: { of: 'completions' },
      message: z.object({ n: z.number() }),
      handler: (m) => Promise.resolve(void seen.push(m)),
    });
    consumer = startQueueConsumer(handler, queues, s, { idlePollMs: 50 });
    const producer = new QueueProducer(() => Promise.resolve(queues));
    await producer.send(queue, { n: 'not a number' });
    await producer.send(queue, { n: 3 });
    await until(() => seen.length === 1);
    await untilEmpty(queue);
    expect(seen).toEqual([{ n: 3 }]);
    expect(s.log.records.filter((r) => r.message.startsWith('Queue message dropped'))).toHaveLength(1);
    expect(s.log.records.filter((r) => r.message === 'Queue message failed')).toHaveLength(0);
  });

  it('redelivers a failing message with a growing dequeue count, then moves it to the poison queue', async () => {
    const queue = `q-${randomUUID()}`;
    const s = await testServices({ env: { ASYNC_COMPLETIONS_QUEUE: queue } });
    const counts: number[] = [];
    const handler = queueHandler({
      name: 'test-fail',
      queue: { of: 'completions' },
      message: z.object({ op: z.string() }),
      handler: (_m, delivery) => {
        counts.push(delivery.dequeueCount);
        return Promise.reject(new Error('always fails'));
      },
    });
    consumer = startQueueConsumer(handler, queues, s, { idlePollMs: 50, visibilityTimeoutSeconds: 1 });
    await new QueueProducer(() => Promise.resolve(queues)).send(queue, { op: 'x' });
    await until(() => counts.length === MAX_DEQUEUE_COUNT, 30_000);
    expect(counts).toEqual([1, 2, 3, 4, 5]);
    // After the last failed delivery the message leaves the queue for `<queue>-poison`.
    const poison = queues.getQueueClient(`${queue}-poison`);
    let moved: unknown;
    const end = Date.now() + 10_000;
    while (moved === undefined && Date.now() < end) {
      const { receivedMessageItems } = await poison.receiveMessages().catch(() => ({ receivedMessageItems: [] }));
      const [first] = receivedMessageItems;
      if (first) moved = decodeMessage(first.messageText);
      else await new Promise((r) => setTimeout(r, 100));
    }
    expect(moved).toEqual({ op: 'x' });
    // Sent to the poison queue first, then deleted here.
    await untilEmpty(queue);
    expect(s.log.records.filter((r) => r.message === 'Queue message failed')).toHaveLength(MAX_DEQUEUE_COUNT);
  });

  it('polls an idle queue less and less often, and takes a message this process sent at once', async () => {
    const queue = `q-${randomUUID()}`;
    const s = await testServices({ env: { ASYNC_COMPLETIONS_QUEUE: queue } });
    const seen: unknown[] = [];
    const handler = queueHandler({
      name: 'test-idle',
      queue: { of: 'completions' },
      message: z.object({ n: z.number() }),
      handler: (m) => Promise.resolve(void seen.push(m)),
    });
    // The consumer's queue client, with its polls counted.
    let polls = 0;
    const counted = new Proxy(queues, {
      get: (target, key) =>
        key === 'getQueueClient'
          ? (name: string) => {
              const client = target.getQueueClient(name);
              const receive = client.receiveMessages.bind(client);
              client.receiveMessages = (...args) => (polls++, receive(...args));
              return client;
            }
          : (Reflect.get(target, key) as unknown),
    });
    consumer = startQueueConsumer(handler, counted, s, { idlePollMs: 100, maxIdlePollMs: 60_000 });
    // Waits of 100, 200, 400, 800 and 1,600 ms: at 3.3 s the consumer sleeps until about 6.3 s.
    await new Promise((r) => setTimeout(r, 3300));
    // Every 100 ms that would be about 33 polls.
    expect(polls).toBeGreaterThanOrEqual(4);
    expect(polls).toBeLessThanOrEqual(8);
    // A message this process sends wakes the consumer: taken long before that next poll.
    await new QueueProducer(() => Promise.resolve(queues)).send(queue, { n: 1 });
    consumer.wake();
    await until(() => seen.length === 1, 1500);
  });
});
