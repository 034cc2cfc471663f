// Concurrent turns on one session (`multitask_strategy`), across instances: each turn with a session is
// listed on the session document while it runs, with a lease its instance renews, so every instance sees
// the same running turns. `parallel` (the default) just lists the turn; `reject` refuses while another
// runs (409 SessionBusy); `enqueue` waits until none runs and then reads the history they wrote;
// `interrupt` marks the running ones cancelled, which their instances notice within CHECK_MS, and waits
// for them to end. A turn leaves the list in the same write that records it (or at once when it fails).
import { DomainError } from '../errors.js';
import { CallCancelledError } from '../models/upstream-errors.js';
import type { Stored } from '../store/types.js';
import { updateDocument } from '../store/update.js';
import type { Container } from '../store/types.js';
import type { RunningTurn, SessionDoc } from './conversations.js';

export type MultitaskStrategy = 'parallel' | 'reject' | 'enqueue' | 'interrupt';

/** A running turn's lease; its instance renews it every LEASE_MS / 3 while the turn runs. */
export const LEASE_MS = 30_000;
/** How often a running turn reads whether it was cancelled from another instance. */
export const CHECK_MS = 500;
/** How long an enqueued or interrupting turn waits for the running ones before giving up (409). */
export const MAX_WAIT_MS = 5 * 60_000;

const sessionBusy = (message: string) => new DomainError('conflict', 'SessionBusy', message);
const live = (list: readonly RunningTurn[] | undefined, now: number) => (list ?? []).filter((t) => t.expires > now);

const localKey = (pk: string, sessionId: string, operationId: string) => `${pk}\n${sessionId}\n${operationId}`;

/** One turn listed on its session: the session as it read after listing, and the turn's cancel signal. */
export interface Turn {
  session: Stored<SessionDoc>;
  /** Aborts when the turn is cancelled (interrupt, cancel) on any instance. */
  signal: AbortSignal;
  /** For recordTurn's session write: drops the turn from the list, or throws CallCancelledError if it was cancelled. */
  readonly settle: (current: Stored<SessionDoc>) => Stored<SessionDoc>;
  /** Stops watching; drops the turn from the list unless recording it did. */
  readonly end: () => Promise<void>;
}

export class SessionTurns {
  /** Turns running on this instance, by session and operation: an interrupt or cancel here aborts them at once. */
  private readonly local = new Map<string, AbortController>();

  constructor(private readonly sessions: Container<SessionDoc>) {}

  /** Lists the turn on its session by the strategy; throws 409 SessionBusy where the strategy refuses. */
  async begin(session: Stored<SessionDoc>, operationId: string, strategy: MultitaskStrategy = 'parallel', signal?: AbortSignal): Promise<Turn> {
    const entry = (): RunningTurn => ({ operation_id: operationId, started_on: new Date().toISOString(), expires: Date.now() + LEASE_MS });
    const deadline = Date.now() + MAX_WAIT_MS;
    let listed: Stored<SessionDoc> | undefined;
    let known: Stored<SessionDoc> | undefined = session;
    for (;;) {
      const state = { busy: false };
      listed = await updateDocument(
        this.sessions,
        session.pk,
        session.id,
        (current) => {
          if (!current) return undefined;
          const now = Date.now();
          const others = live(current.running, now).filter((t) => t.operation_id !== operationId);
          if (others.length > 0 && strategy === 'reject') throw sessionBusy(`Another turn of session ${session.id} is running`);
          if (others.length > 0 && strategy === 'interrupt') {
            state.busy = true;
            if (others.every((t) => t.cancel)) return undefined;
            return { ...current, running: others.map((t) => ({ ...t, cancel: true })) };
          }
          if (others.length > 0 && strategy === 'enqueue') {
            state.busy = true;
            return undefined;
          }
          return { ...current, running: [...others, entry()] };
        },
        known ? { known } : {},
      );
      known = undefined;
      if (!listed) throw new DomainError('not-found', 'NotFound', `Session ${session.id} not found`);
      if (!state.busy) break;
      if (strategy === 'interrupt') for (const t of live(listed.running, Date.now())) this.local.get(localKey(session.pk, session.id, t.operation_id))?.abort();
      if (Date.now() > deadline) throw sessionBusy(`The running turns of session ${session.id} did not end within ${MAX_WAIT_MS / 1000} s`);
      if (signal?.aborted) throw new CallCancelledError('The client went away while the turn waited');
      await new Promise((r) => setTimeout(r, 100));
    }
    return this.watch(listed, operationId);
  }

  private watch(session: Stored<SessionDoc>, operationId: string): Turn {
    const controller = new AbortController();
    const key = localKey(session.pk, session.id, operationId);
    this.local.set(key, controller);
    let recorded = false;
    let renewedAt = Date.now();
    const mine = (s: SessionDoc | undefined) => s?.running?.find((t) => t.operation_id === operationId);
    const timer = setInterval(() => {
      void (async () => {
        const renew = Date.now() - renewedAt > LEASE_MS / 3;
        const now = renew
          ? await updateDocument(this.sessions, session.pk, session.id, (c) => {
              const t = mine(c);
              return c && t ? { ...c, running: (c.running ?? []).map((r) => (r === t ? { ...r, expires: Date.now() + LEASE_MS } : r)) } : undefined;
            })
          : await this.sessions.read(session.pk, session.id);
        if (renew) renewedAt = Date.now();
        if (mine(now)?.cancel) controller.abort(new CallCancelledError('The turn was cancelled'));
      })().catch(() => undefined);
    }, CHECK_MS);
    timer.unref();
    const without = (c: SessionDoc): RunningTurn[] => (c.running ?? []).filter((t) => t.operation_id !== operationId && t.expires > Date.now());
    return {
      session,
      signal: controller.signal,
      settle: (current) => {
        if (mine(current)?.cancel || controller.signal.aborted) throw new CallCancelledError('The turn was cancelled');
        recorded = true;
        return { ...current, running: without(current) };
      },
      end: async () => {
        clearInterval(timer);
        if (this.local.get(key) === controller) this.local.delete(key);
        if (recorded) return;
        await updateDocument(this.sessions, session.pk, session.id, (c) => (c && mine(c) ? { ...c, running: without(c) } : undefined)).catch(() => undefined);
      },
    };
  }

  /** Marks a running turn of the session cancelled (the cancel endpoint); aborts it at once when it runs here. */
  async cancel(pk: string, sessionId: string, operationId: string): Promise<void> {
    this.local.get(localKey(pk, sessionId, operationId))?.abort(new CallCancelledError('The turn was cancelled'));
    await updateDocument(this.sessions, pk, sessionId, (c) => {
      const t = c?.running?.find((r) => r.operation_id === operationId);
      return c && t && !t.cancel ? { ...c, running: (c.running ?? []).map((r) => (r === t ? { ...r, cancel: true } : r)) } : undefined;
    }).catch(() => undefined);
  }
}
