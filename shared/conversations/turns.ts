// Concurrent turns on one session (`multitask_strategy`), across instances: each turn with a session is a
// document of the `turns` container while it runs (one partition per session; a lease its instance renews),
// so every instance sees the same running turns, and turns of one session never write the same document.
// A turn lists itself first and then looks at the others, so two turns that start together both see each
// other: `parallel` (the default) only lists itself; `reject` leaves again and answers 409 SessionBusy when
// another turn runs; `enqueue` waits until every turn listed before it has ended (first come, first served)
// and then reads the history they wrote; `interrupt` marks the others cancelled, which their instances read
// within CHECK_MS, and waits for them to end. A turn leaves the list once it has been recorded or has failed.
import { DomainError } from '../errors.js';
import { CallCancelledError } from '../models/upstream-errors.js';
import { ConflictError, type Container, type Doc, type Stored } from '../store/types.js';
import type { Conversations, SessionDoc } from './conversations.js';

export type MultitaskStrategy = 'parallel' | 'reject' | 'enqueue' | 'interrupt';

interface TurnDoc extends Doc {
  session_id: string;
  operation_id: string;
  started_on: string;
  /** Epoch milliseconds past which the turn counts as gone (the store's TTL removes it later). */
  expires: number;
  /** Another turn (interrupt) or the starter (cancel) asked it to stop. */
  cancel?: boolean;
}

/** A running turn's lease; its instance renews it every LEASE_MS / 3 while the turn runs. */
export const LEASE_MS = 30_000;
/** How often a running turn reads whether it was cancelled from another instance. */
export const CHECK_MS = 500;
/** How long an enqueued or interrupting turn waits for the others before giving up (409). */
export const MAX_WAIT_MS = 5 * 60_000;
const POLL_MS = 100;

const sessionBusy = (message: string) => new DomainError('conflict', 'SessionBusy', message);
const cancelled = () => new CallCancelledError('The turn was cancelled');
const partitionOf = (session: SessionDoc) => `${session.pk}\n${session.id}`;
/** Listed before: earlier start, then the operation id. */
const before = (a: TurnDoc, b: TurnDoc) => a.started_on < b.started_on || (a.started_on === b.started_on && a.operation_id < b.operation_id);

/** One turn listed on its session: the session as it reads once the turn may run, and its cancel signal. */
export interface Turn {
  session: Stored<SessionDoc>;
  /** Aborts when the turn is cancelled (interrupt, cancel) on any instance. */
  signal: AbortSignal;
  /** Throws CallCancelledError when the turn was cancelled: checked right before the turn is recorded. */
  readonly checkNotCancelled: () => Promise<void>;
  /** Stops watching and leaves the list. */
  readonly end: () => Promise<void>;
}

export class SessionTurns {
  /** Turns running on this instance, by partition and operation: an interrupt or cancel here aborts them at once. */
  private readonly local = new Map<string, AbortController>();

  constructor(
    private readonly turns: Container<TurnDoc>,
    private readonly conversations: Conversations,
  ) {}

  /** Lists the turn on its session by the strategy; throws 409 SessionBusy where the strategy refuses. */
  async begin(session: Stored<SessionDoc>, operationId: string, strategy: MultitaskStrategy = 'parallel', signal?: AbortSignal): Promise<Turn> {
    const pk = partitionOf(session);
    const mine: TurnDoc = { id: operationId, pk, session_id: session.id, operation_id: operationId, started_on: new Date().toISOString(), expires: Date.now() + LEASE_MS };
    const listed = this.turns.create(mine).catch(async (e: unknown) => {
      // The same operation again (a redelivery, a retry): it takes over its listing.
      if (!(e instanceof ConflictError)) throw e;
      await this.turns.upsert(mine);
    });
    const controller = new AbortController();
    const key = `${pk}\n${operationId}`;
    this.local.set(key, controller);
    const leave = async () => {
      if (this.local.get(key) === controller) this.local.delete(key);
      await listed.catch(() => undefined);
      await this.turns.delete(pk, operationId).catch(() => undefined);
    };
    // A parallel turn waits for nobody: its listing is written while the turn gets under way.
    if (strategy === 'parallel') return this.watch(session, mine, controller, leave, listed);
    try {
      await listed;
      const others = async () => (await this.turns.query({ partition: pk })).items.filter((t) => t.operation_id !== operationId && t.expires > Date.now());
      const deadline = Date.now() + MAX_WAIT_MS;
      let waitFor = await others();
      if (strategy === 'reject' && waitFor.length > 0) throw sessionBusy(`Another turn of session ${session.id} is running`);
      if (strategy === 'enqueue') waitFor = waitFor.filter((t) => before(t, mine));
      if (strategy === 'interrupt') {
        for (const t of waitFor) {
          this.local.get(`${pk}\n${t.operation_id}`)?.abort(cancelled());
          await this.turns.patch(pk, t.id, [{ op: 'set', path: 'cancel', value: true }]).catch(() => undefined);
        }
      }
      while (waitFor.length > 0) {
        if (Date.now() > deadline) throw sessionBusy(`The running turns of session ${session.id} did not end within ${MAX_WAIT_MS / 1000} s`);
        if (signal?.aborted || controller.signal.aborted) throw cancelled();
        await new Promise((r) => setTimeout(r, POLL_MS));
        const now = await this.turns.query({ partition: pk });
        if (now.items.find((t) => t.operation_id === operationId)?.cancel) throw cancelled();
        const still = new Set(now.items.filter((t) => t.expires > Date.now()).map((t) => t.operation_id));
        waitFor = waitFor.filter((t) => still.has(t.operation_id));
      }
      // What the turns before it wrote is its history.
      const current = await this.conversations.get(session.pk, session.id);
      return this.watch(current, mine, controller, leave, listed);
    } catch (e) {
      await leave();
      throw e;
    }
  }

  private watch(session: Stored<SessionDoc>, mine: TurnDoc, controller: AbortController, leave: () => Promise<void>, listed: Promise<unknown>): Turn {
    let renewedAt = Date.now();
    const read = async () => {
      if (Date.now() - renewedAt > LEASE_MS / 3) {
        renewedAt = Date.now();
        const current = await this.turns.read(mine.pk, mine.id);
        if (current && !current.cancel) await this.turns.replace({ ...current, expires: Date.now() + LEASE_MS }, { ifMatch: current._etag });
        return current;
      }
      return this.turns.read(mine.pk, mine.id);
    };
    const timer = setInterval(() => {
      read().then((t) => t?.cancel && controller.abort(cancelled()), () => undefined);
    }, CHECK_MS);
    timer.unref();
    return {
      session,
      signal: controller.signal,
      checkNotCancelled: async () => {
        await listed;
        if (controller.signal.aborted || (await this.turns.read(mine.pk, mine.id))?.cancel) throw cancelled();
      },
      end: async () => {
        clearInterval(timer);
        await leave();
      },
    };
  }

  /** Marks a running turn of the session cancelled (the cancel endpoint); aborts it at once when it runs here. */
  async cancel(owner: string, sessionId: string, operationId: string): Promise<void> {
    const pk = `${owner}\n${sessionId}`;
    this.local.get(`${pk}\n${operationId}`)?.abort(cancelled());
    await this.turns.patch(pk, operationId, [{ op: 'set', path: 'cancel', value: true }]).catch(() => undefined);
  }
}
