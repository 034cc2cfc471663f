// Group commit for the embedded store: the writes asked for in one turn of the event loop (a completion's
// turn, usage record and quota counters; at load, the turns of many requests) run in one immediate
// transaction, each in its own savepoint. A transaction's fixed cost (taking the write lock, appending the
// commit to the WAL) is then paid once per group, not once per write. Every write still answers only after
// the COMMIT that holds it, so nothing acknowledged can be lost; a write that fails rolls back alone.
import type Database from 'better-sqlite3';
import { errorCode, StoreError } from './types.js';

/** A write waiting for its group: its work, and its caller's promise, settled with what the work answered. */
interface Pending {
  work: () => void;
  resolve: () => void;
  reject: (error: unknown) => void;
  /** When this write first found the database busy. */
  busySince?: number;
}

type Outcome = { ok: true } | { ok: false; error: unknown };

export class GroupCommit {
  private pending: Pending[] = [];
  private scheduled: NodeJS.Immediate | undefined;
  private retry: NodeJS.Timeout | undefined;
  /** Immediate at the top (the write lock taken at BEGIN), a savepoint when nested. */
  private readonly transaction: Database.Transaction<(work: () => void) => void>;

  /** @param firstWrite called once, when the first write is asked for (the store starts its checkpointer). */
  constructor(
    private readonly db: Database.Database,
    private firstWrite?: () => void,
  ) {
    this.transaction = db.transaction((work: () => void) => work());
  }

  /** Runs `work` (synchronous SQLite statements) in the next group; settles once that group committed. */
  run<R>(work: () => R): Promise<R> {
    if (!this.db.open) return Promise.reject(new StoreError('The store is closed'));
    if (this.firstWrite) {
      const started = this.firstWrite;
      this.firstWrite = undefined;
      started();
    }
    return new Promise<R>((resolve, reject) => {
      let value: R;
      this.pending.push({ work: () => (value = work()), resolve: () => resolve(value), reject });
      // After the I/O callbacks of this loop turn: every request that arrived with it joins the group.
      if (!this.retry) this.scheduled ??= setImmediate(() => this.flush());
    });
  }

  /** Commits what is waiting now (also on close, so no accepted write is dropped). */
  flush(): void {
    if (this.scheduled) clearImmediate(this.scheduled);
    clearTimeout(this.retry);
    this.scheduled = this.retry = undefined;
    const group = this.pending;
    this.pending = [];
    if (group.length === 0) return;
    if (!this.db.open) {
      for (const p of group) p.reject(new StoreError('The store is closed'));
      return;
    }
    const progress = { began: false }; // set inside the transaction callback
    const settled: [Pending, Outcome][] = [];
    try {
      this.transaction.immediate(() => {
        progress.began = true;
        const [only] = group;
        // Alone: no savepoint needed; a failure rolls the whole transaction back.
        if (group.length === 1 && only) {
          only.work();
          settled.push([only, { ok: true }]);
          return;
        }
        for (const p of group) {
          const outcome = attempt(() => this.transaction(p.work));
          // Some errors (a full disk) make SQLite roll back the whole transaction: then nothing of it holds.
          if (!this.db.inTransaction) throw outcome.ok ? new Error('The transaction was rolled back') : outcome.error;
          settled.push([p, outcome]);
        }
      });
    } catch (e) {
      // The write lock was refused at once (SQLite skips the busy wait where waiting could deadlock, as when the
      // checkpointer empties the log): nothing ran, so the group tries again shortly, for a second at most.
      const code = errorCode(e);
      const busy = typeof code === 'string' && code.startsWith('SQLITE_BUSY');
      if (!progress.began && busy && this.busySince(group) < 1000) {
        this.pending = [...group, ...this.pending];
        this.retry = setTimeout(() => this.flush(), 2);
        return;
      }
      // The transaction failed (the work of a lone write threw, BEGIN timed out, COMMIT could not write):
      // nothing of the group is stored.
      for (const p of group) p.reject(e);
      return;
    }
    for (const [p, outcome] of settled) settle(p, outcome);
  }

  /** Milliseconds since the group's oldest write first found the database busy. */
  private busySince(group: Pending[]): number {
    const now = Date.now();
    for (const p of group) p.busySince ??= now;
    return now - Math.min(...group.map((p) => p.busySince ?? now));
  }
}

function settle(p: Pending, outcome: Outcome): void {
  if (outcome.ok) p.resolve();
  else p.reject(outcome.error);
}

/** A single write's failure is its own: caught here (its savepoint already rolled back), answered after the commit. */
function attempt(work: () => void): Outcome {
  try {
    work();
    return { ok: true };
  } catch (error) {
    return { ok: false, error };
  }
}
