// The connection gate: an endpoint's calls bounded by max_connections, a freed connection going to the
// waiting caller that holds fewest, waiting bounded by the call's deadline (503 ConnectionLimit), and a
// caller that gives up leaving the queue.
import { describe, expect, it } from 'vitest';
import { ConnectionGate } from '../../../../shared/models/connection-gate.js';
import { UpstreamError } from '../../../../shared/models/upstream-errors.js';

const endpoint = (maxConnections: number, objectId = 'e') => ({ objectId, maxConnections });
const later = (ms = 60_000) => Date.now() + ms;

describe('ConnectionGate', () => {
  it('holds at most max_connections per endpoint, and endpoints never wait for each other', async () => {
    const gate = new ConnectionGate();
    const held = [
      await gate.acquire(endpoint(2), { tenant: 'a', deadline: later() }),
      await gate.acquire(endpoint(2), { tenant: 'a', deadline: later() }),
    ];
    let third: (() => void) | undefined;
    const waiting = Promise.resolve(gate.acquire(endpoint(2), { tenant: 'a', deadline: later() })).then(
      (r) => (third = r),
    );
    expect(gate.load('e')).toEqual({ inUse: 2, waiting: 1 });
    // Another endpoint has its own connections.
    const other = await gate.acquire(endpoint(1, 'f'), { tenant: 'a', deadline: later() });
    expect(gate.load('f')).toEqual({ inUse: 1, waiting: 0 });
    held[0]!();
    held[0]!(); // a second release gives nothing back twice
    await waiting;
    expect(third).toBeTypeOf('function');
    expect(gate.load('e')).toEqual({ inUse: 2, waiting: 0 });
    held[1]!();
    third!();
    other();
    expect(gate.load('e')).toEqual({ inUse: 0, waiting: 0 });
  });

  it('gives a freed connection to the waiting caller holding fewest: a busy agent cannot starve another', async () => {
    const gate = new ConnectionGate();
    const busy = [
      await gate.acquire(endpoint(2), { tenant: 'busy', deadline: later() }),
      await gate.acquire(endpoint(2), { tenant: 'busy', deadline: later() }),
    ];
    const order: string[] = [];
    const queued = [
      Promise.resolve(gate.acquire(endpoint(2), { tenant: 'busy', deadline: later() })).then(
        (r) => (order.push('busy'), r),
      ),
      Promise.resolve(gate.acquire(endpoint(2), { tenant: 'busy', deadline: later() })).then(
        (r) => (order.push('busy'), r),
      ),
      Promise.resolve(gate.acquire(endpoint(2), { tenant: 'quiet', deadline: later() })).then(
        (r) => (order.push('quiet'), r),
      ),
    ];
    busy[0]!();
    await new Promise((r) => setImmediate(r));
    // The quiet agent, holding none, came last and is served first.
    expect(order).toEqual(['quiet']);
    busy[1]!();
    const [firstBusy, , quiet] = [await queued[0], undefined, await queued[2]];
    expect(order).toEqual(['quiet', 'busy']);
    quiet!();
    const secondBusy = await queued[1];
    expect(order).toEqual(['quiet', 'busy', 'busy']);
    firstBusy!();
    secondBusy!();
    expect(gate.load('e')).toEqual({ inUse: 0, waiting: 0 });
  });

  it('refuses a call that gets no connection before its deadline with 503 ConnectionLimit', async () => {
    const gate = new ConnectionGate();
    const held = await gate.acquire(endpoint(1), { tenant: 'a', deadline: later() });
    const started = Date.now();
    const refused = await Promise.resolve(gate.acquire(endpoint(1), { tenant: 'b', deadline: Date.now() + 100 })).catch(
      (e: unknown) => e,
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(90);
    expect(refused).toBeInstanceOf(UpstreamError);
    expect(refused).toMatchObject({
      kind: 'unavailable',
      code: 'ConnectionLimit',
      message: expect.stringContaining('All 1 connections') as string,
    });
    expect(gate.load('e')).toEqual({ inUse: 1, waiting: 0 });
    held();
  });

  it('takes a caller that gives up out of the queue', async () => {
    const gate = new ConnectionGate();
    const held = await gate.acquire(endpoint(1), { tenant: 'a', deadline: later() });
    const controller = new AbortController();
    const gaveUp = Promise.resolve(
      gate.acquire(endpoint(1), { tenant: 'b', deadline: later(), signal: controller.signal }),
    ).catch((e: unknown) => e);
    controller.abort(new Error('client left'));
    expect(await gaveUp).toMatchObject({ message: 'client left' });
    expect(gate.load('e')).toEqual({ inUse: 1, waiting: 0 });
    held();
    expect(gate.load('e')).toEqual({ inUse: 0, waiting: 0 });
  });

  it('applies a changed max_connections at once', async () => {
    const gate = new ConnectionGate();
    const held = await gate.acquire(endpoint(1), { tenant: 'a', deadline: later() });
    const waiting = gate.acquire(endpoint(1), { tenant: 'a', deadline: later() });
    // The endpoint saved with room for two: the waiting call is let in by the next call's arrival.
    const third = gate.acquire(endpoint(3), { tenant: 'a', deadline: later() });
    expect(typeof third).toBe('function');
    expect(await waiting).toBeTypeOf('function');
    expect(gate.load('e')).toEqual({ inUse: 3, waiting: 0 });
    held();
  });
});
