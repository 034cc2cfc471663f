// A streamed answer's event channel holds a bounded backlog: a client that stops reading cannot make the service keep
// an answer's events in memory without end; one large event (a long answer's `completed`) is not a backlog.
import { describe, expect, it } from 'vitest';
import { EventChannel, SlowReaderError } from '../../../../shared/http/event-stream.js';

describe('event channel', () => {
  it('gives every event in order when the reader keeps up, and one event larger than the bound', async () => {
    const channel = new EventChannel(1000);
    const read: string[] = [];
    const reader = (async () => {
      for await (const e of channel) read.push(e);
    })();
    const tick = () => new Promise((r) => setTimeout(r, 0));
    channel.push('a');
    await tick();
    channel.push('x'.repeat(5000));
    await tick();
    channel.push('b');
    channel.end();
    await reader;
    expect(read).toEqual(['a', 'x'.repeat(5000), 'b']);
  });

  it('drops the backlog of a reader that stopped, and its next read fails', async () => {
    const channel = new EventChannel(1000);
    const iterator = channel[Symbol.asyncIterator]();
    channel.push('first');
    expect(await iterator.next()).toEqual({ done: false, value: 'first' });
    for (let i = 0; i < 100_000; i++) channel.push('event: delta\ndata: {"text":"more"}\n\n');
    await expect(iterator.next()).rejects.toThrow(SlowReaderError);
  });

  it('tells its producer when the reader leaves before the end, and not after it', async () => {
    let abandoned = 0;
    const left = new EventChannel(1000, () => abandoned++);
    const reading = left[Symbol.asyncIterator]();
    const pending = reading.next();
    left.push('a');
    left.push('b');
    expect(await pending).toEqual({ done: false, value: 'a' });
    await reading.return?.();
    expect(abandoned).toBe(1);
    expect(await reading.next()).toEqual({ done: true, value: undefined });

    const behind = new EventChannel(100, () => abandoned++);
    for (let i = 0; i < 10; i++) behind.push('x'.repeat(50));
    await expect(behind[Symbol.asyncIterator]().next()).rejects.toThrow(SlowReaderError);
    expect(abandoned).toBe(2);

    const finished = new EventChannel(1000, () => abandoned++);
    finished.push('last');
    finished.end();
    const all: string[] = [];
    for await (const e of finished) all.push(e);
    expect(all).toEqual(['last']);
    expect(abandoned).toBe(2);
  });

  it('drains into a sink as events are pushed, holds them while the sink is behind, and ends after the last', () => {
    const channel = new EventChannel(1000);
    const written: string[] = [];
    let taking = true;
    let ended: Error | undefined | 'open' = 'open';
    channel.push('queued before');
    const flow = channel.drainTo({ write: (e) => (written.push(e), taking), end: (error) => (ended = error) });
    expect(written).toEqual(['queued before']);
    channel.push('a');
    taking = false;
    channel.push('b');
    channel.push('c');
    channel.end();
    // 'b' was written and not taken: 'c' waits for the sink, and so does the end.
    expect(written).toEqual(['queued before', 'a', 'b']);
    expect(ended).toBe('open');
    taking = true;
    flow.resume();
    expect(written).toEqual(['queued before', 'a', 'b', 'c']);
    expect(ended).toBeUndefined();
  });

  it('ends a sink that fell too far behind with SlowReaderError, and tells the producer', () => {
    let abandoned = 0;
    const channel = new EventChannel(100, () => abandoned++);
    let ended: Error | undefined;
    channel.drainTo({ write: () => false, end: (error) => (ended = error) });
    for (let i = 0; i < 10; i++) channel.push('x'.repeat(50));
    expect(ended).toBeInstanceOf(SlowReaderError);
    expect(abandoned).toBe(1);
  });

  it('tells its producer when the sink stops before the end, and writes nothing more', () => {
    let abandoned = 0;
    const channel = new EventChannel(1000, () => abandoned++);
    const written: string[] = [];
    const flow = channel.drainTo({ write: (e) => (written.push(e), true), end: () => undefined });
    channel.push('a');
    flow.stop();
    channel.push('b');
    expect(written).toEqual(['a']);
    expect(abandoned).toBe(1);
  });
});
