// This instance's shares of budgets: each taken from a budget's shared counter by one atomic increment of its
// `reserved`, then given to calls here without a store round trip. What calls spent is moved from `reserved` to
// `spent` in the store within a second; a share idle for that long is given back.
import type { Log } from '../log.js';
import { NotFoundError, type Container } from '../store/types.js';
import { incrementCounter } from '../store/update.js';
import {
  periodOf,
  toMicros,
  type Applying,
  type BudgetCounterDoc,
  type BudgetDefinition,
  type Period,
} from './budget-definitions.js';

/** A share of one budget's period held by this instance. */
export interface Lease {
  budget: BudgetDefinition;
  pk: string;
  subject: string | undefined;
  period: string;
  /** Millionths taken from the counter and not yet given back or turned into spend. */
  held: number;
  /** Millionths held by calls here that have not ended. */
  inUse: number;
  /** Millionths spent by calls here, not yet written to the counter. */
  spent: number;
  /** The counter's spent + reserved at the last increment: what the other instances had taken then. */
  taken: number;
  /** When a call last used it (epoch ms). */
  used: number;
}

/** Millionths of a lease no call here holds or has spent. */
export const available = (l: Lease) => l.held - l.inUse - l.spent;

/** Share of a budget's limit an instance takes at once: a call that fits in it needs no store round trip. */
const LEASE_SHARE = 0.01;
/** How often leases write their spend to the store and give back what lies idle. */
export const FLUSH_MS = 1000;

/** This instance's leases, by counter partition and period, over the budgets' counters. */
export class BudgetLeases {
  private readonly leases = new Map<string, Lease>();

  constructor(
    private readonly counters: Container<BudgetCounterDoc>,
    private readonly log: Log,
  ) {}

  /** The lease held here for a counter partition's period, if any. */
  held(pk: string, period: string): Lease | undefined {
    return this.leases.get(`${pk}\n${period}`);
  }

  /**
   * A lease of this budget's period with room for `micros`: the one held here, or a new share taken from the
   * store (a hundredth of the limit, or the call's amount when larger; the amount alone when the share does
   * not fit). Undefined when not even the amount fits.
   */
  async leaseFor(applying: Applying, period: Pick<Period, 'id' | 'end'>, micros: number): Promise<Lease | undefined> {
    const { budget, pk, subject } = applying;
    const key = `${pk}\n${period.id}`;
    const held = this.leases.get(key);
    if (held && available(held) >= micros) return held;
    const limit = toMicros(budget.limit);
    // Topped up: what the lease has left counts towards the call.
    const need = micros - (held ? Math.max(0, available(held)) : 0);
    for (const want of new Set([Math.max(need, Math.floor(limit * LEASE_SHARE)), need])) {
      const after = await this.increment(applying, { period, field: 'reserved', micros: want });
      if (after.spent + after.reserved <= limit) {
        // Another call may have made a lease meanwhile: the share joins it.
        const lease = this.leases.get(key) ?? {
          budget,
          pk,
          subject,
          period: period.id,
          held: 0,
          inUse: 0,
          spent: 0,
          taken: 0,
          used: Date.now(),
        };
        lease.held += want;
        lease.taken = after.spent + after.reserved;
        this.leases.set(key, lease);
        if (available(lease) >= micros) return lease;
        continue;
      }
      await this.counters.patch(pk, period.id, [{ op: 'incr', path: 'reserved', value: -want }]);
    }
    return undefined;
  }

  /**
   * Atomically adds to a counter's `reserved` or `spent`, creating the counter (kept a day past its period) on first
   * use.
   */
  increment(
    { budget, pk, subject }: Applying,
    { period, field, micros }: { period: Pick<Period, 'id' | 'end'>; field: 'reserved' | 'spent'; micros: number },
  ): Promise<BudgetCounterDoc> {
    const ttl = Math.ceil((period.end - Date.now()) / 1000) + 86_400;
    const first = {
      id: period.id,
      pk,
      ttl,
      budget: budget.name,
      ...(subject === undefined ? {} : { subject }),
      spent: 0,
      reserved: 0,
      [field]: micros,
    };
    return incrementCounter(
      this.counters,
      { pk, id: period.id },
      { ops: [{ op: 'incr', path: field, value: micros }], initial: first },
    );
  }

  /** Writes what leases spent and gives back idle ones (every second, and on close: nothing stays held). */
  async flush(all: boolean): Promise<void> {
    const now = Date.now();
    await Promise.all(
      [...this.leases.entries()].map(async ([key, lease]) => {
        const idle =
          lease.inUse === 0 &&
          (all || now - lease.used >= FLUSH_MS || periodOf(lease.budget.period, now).id !== lease.period);
        const back = idle ? available(lease) : 0;
        const spent = lease.spent;
        if (spent === 0 && back === 0 && !idle) return;
        lease.spent -= spent;
        lease.held -= spent + back;
        if (idle && lease.held <= 0) this.leases.delete(key);
        if (spent === 0 && back === 0) return;
        await this.counters
          .patch(lease.pk, lease.period, [
            { op: 'incr', path: 'reserved', value: -(spent + back) },
            ...(spent > 0 ? [{ op: 'incr' as const, path: 'spent', value: spent }] : []),
          ])
          .catch((e: unknown) => {
            if (!(e instanceof NotFoundError))
              this.log.warn('A budget counter could not be written', {
                budget: lease.budget.name,
                error: e instanceof Error ? e.message : String(e),
              });
          });
      }),
    );
  }
}
