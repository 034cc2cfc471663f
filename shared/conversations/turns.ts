// Concurrent turns on one session (`multitask_strategy`), across instances: each turn with a session is a
// document in the session's partition while it runs (a lease its instance renews), so every instance sees
// the same running turns and turns of one session never write the same document. A turn lists itself
// first and then looks at the others, so two turns that start together both see each other: `parallel`
// (the default) only lists itself, while it gets under way; `reject` leaves again and answers 409
// SessionBusy when another turn runs; `enqueue` waits until every turn listed before it has ended (first
// come, first served) and then reads the history they wrote; `interrupt` marks the others cancelled, which
// their instances read within CHECK_MS, and waits for them to end. The write that records a turn also
// removes its listing, guarded by the listing's ETag: a turn cancelled meanwhile is refused, not recorded.
import { DomainError } from '../errors.js';
import { CallCancelledError } from '../models/upstream-errors.js';
import { ConflictError, type Container, type Doc, type DocsOf, type Stored } from '../store/types.js';
import type { Conversations, SessionDoc } from './conversations.js';

export type MultitaskStrategy = 'parallel' | 'reject' | 'enqueue' | 'interrupt';

export interface TurnDoc extends Doc {
  type: 'Turn';
  session_id: string;
  operation_id: string;
  /** When it was listed (the session index orders the partition's items by `timestamp`). */
  timestamp: string;
  /** Epoch milliseconds past which the turn counts as gone (its instance stopped renewing it). */
  expires: number;
  /** Another turn (interrupt) or the starter (cancel) asked it to stop. */
  cancel?: boolean;
}

declare module '../store/types.js' {
  interface StoredDocs {
    'sessions/turn': TurnDoc;
  }
}

/** Whether a document of the sessions container is a running turn's listing. */
export const isTurn = (doc: DocsOf<'sessions'>): doc is TurnDoc => doc.type === 'Turn';

/** A running turn's lease; its instance renews it every LEASE_MS / 3 while the turn runs. */
export const LEASE_MS = 30_000;
/** How often a running turn reads whether it was cancelled from another instance. */
export const CHECK_MS = 500;
/** How long an enqueued or interrupting turn waits for the others before giving up (409). */
export const MAX_WAIT_MS = 5 * 60_000;
const POLL_MS = 100;

const sessionBusy = (message: string) => new DomainError('conflict', 'SessionBusy', message);
const cancelled = () => new CallCancelledError('The turn was cancelled');
export const turnId = (operationId: string) => `${operationId}-turn`;
/** A turn running on this instance, by owner (the session's partition), session and operation. */
const localKey = (owner: string, sessionId: string, operationId: string) => `${owner}\n${sessionId}\n${operationId}`;
/** Listed before: earlier, then by operation id. */
const before = (a: TurnDoc, b: TurnDoc) =>
  a.timestamp < b.timestamp || (a.timestamp === b.timestamp && a.operation_id < b.operation_id);

/** One turn listed on its session: the session as it reads once the turn may run, and its cancel signal. */
export interface Turn {
  session: Stored<SessionDoc>;
  /** Aborts when the turn is cancelled (interrupt, cancel) on any instance. */
  signal: AbortSignal;
  /**
   * The listing as the write that records the turn removes it (its id and ETag); throws CallCancelledError
   * when the turn was cancelled. Stops the lease's renewal, so the ETag stays the one given.
   */
  readonly listing: () => Promise<{ id: string; etag: string }>;
  /** The write that records the turn removed its listing. */
  readonly recorded: () => void;
  /** Stops watching and leaves the list, unless the turn's record removed the listing already. */
  readonly end: () => Promise<void>;
}

/** A turn's listing on its session: the document, its cancel controller, how it leaves, and its write. */
interface Listing {
  mine: TurnDoc;
  controller: AbortController;
  leave: () => Promise<void>;
  listed: Promise<Stored<TurnDoc>>;
}

export class SessionTurns {
  /** Turns running on this instance, by session and operation: an interrupt or cancel here aborts them at once. */
  private readonly local = new Map<string, AbortController>();

  constructor(
    private readonly turns: Container<TurnDoc>,
    private readonly conversations: Conversations,
  ) {}

  private ofSession(pk: string, sessionId: string) {
    return this.turns.query({
      partition: pk,
      where: [
        { field: 'type', op: 'eq', value: 'Turn' },
        { field: 'session_id', op: 'eq', value: sessionId },
      ],
    });
  }

  /** Lists the turn on its session by the strategy; throws 409 SessionBusy where the strategy refuses. */
  async begin(
    session: Stored<SessionDoc>,
    operationId: string,
    {
      strategy = 'parallel',
      signal,
    }: { strategy?: MultitaskStrategy | undefined; signal?: AbortSignal | undefined } = {},
  ): Promise<Turn> {
    const mine: TurnDoc = {
      id: turnId(operationId),
      pk: session.pk,
      type: 'Turn',
      session_id: session.id,
      operation_id: operationId,
      timestamp: new Date().toISOString(),
      expires: Date.now() + LEASE_MS,
    };
    // The same operation again (a redelivery, a retry) takes over its listing.
    const list = () =>
      this.turns.create(mine).catch((e: unknown) => {
        if (e instanceof ConflictError) return this.turns.upsert(mine);
        throw e;
      });
    // A parallel turn waits for nobody, so its listing is written after this turn of the event loop, once
    // the turn's model call has gone out: the caller waits on that call, and a Cosmos DB write spends about
    // half a millisecond of CPU before it sends anything. The others wait for their listing before they look.
    const listed = strategy === 'parallel' ? new Promise<void>((r) => setImmediate(r)).then(list) : list();
    const controller = new AbortController();
    const key = localKey(session.pk, session.id, operationId);
    this.local.set(key, controller);
    const leave = async () => {
      if (this.local.get(key) === controller) this.local.delete(key);
      await listed.then(() => this.turns.delete(mine.pk, mine.id)).catch(() => undefined);
    };
    // A parallel turn waits for nobody: its listing is written while the turn gets under way.
    if (strategy === 'parallel') return this.watch(session, { mine, controller, leave, listed });
    try {
      await listed;
      const now = Date.now();
      const all = (await this.ofSession(session.pk, session.id)).items;
      // Listings whose instance stopped are swept on the way.
      for (const t of all.filter((t) => t.expires <= now)) await this.turns.delete(t.pk, t.id).catch(() => undefined);
      let waitFor = all.filter((t) => t.operation_id !== operationId && t.expires > now);
      if (strategy === 'reject' && waitFor.length > 0)
        throw sessionBusy(`Another turn of session ${session.id} is running`);
      if (strategy === 'enqueue') waitFor = waitFor.filter((t) => before(t, mine));
      if (strategy === 'interrupt') {
        for (const t of waitFor) {
          this.local.get(localKey(session.pk, session.id, t.operation_id))?.abort(cancelled());
          await this.turns.patch(t.pk, t.id, [{ op: 'set', path: 'cancel', value: true }]).catch(() => undefined);
        }
      }
      const deadline = Date.now() + MAX_WAIT_MS;
      while (waitFor.length > 0) {
        if (Date.now() > deadline)
          throw sessionBusy(`The running turns of session ${session.id} did not end within ${MAX_WAIT_MS / 1000} s`);
        if (signal?.aborted || controller.signal.aborted) throw cancelled();
        await new Promise((r) => setTimeout(r, POLL_MS));
        const items = (await this.ofSession(session.pk, session.id)).items;
        if (items.find((t) => t.operation_id === operationId)?.cancel) throw cancelled();
        const still = new Set(items.filter((t) => t.expires > Date.now()).map((t) => t.operation_id));
        waitFor = waitFor.filter((t) => still.has(t.operation_id));
      }
      // What the turns before it wrote is its history.
      return this.watch(await this.conversations.get(session.pk, session.id), { mine, controller, leave, listed });
    } catch (e) {
      await leave();
      throw e;
    }
  }

  /** The turn, once it may run: its listing watched for a cancel, and its lease renewed, until it ends. */
  private watch(session: Stored<SessionDoc>, { mine, controller, leave, listed }: Listing): Turn {
    let etag = listed.then((t) => t._etag);
    let renewedAt = Date.now();
    let checking: Promise<unknown> = Promise.resolve();
    const check = async () => {
      const current = await this.turns.read(mine.pk, mine.id);
      if (!current || current.cancel) return controller.abort(cancelled());
      if (Date.now() - renewedAt < LEASE_MS / 3) return;
      renewedAt = Date.now();
      const renewed = await this.turns.replace(
        { ...current, expires: Date.now() + LEASE_MS },
        { ifMatch: current._etag },
      );
      etag = Promise.resolve(renewed._etag);
    };
    const timer = setInterval(() => {
      checking = check().catch(() => undefined);
    }, CHECK_MS);
    timer.unref();
    let recorded = false;
    return {
      session,
      signal: controller.signal,
      listing: async () => {
        clearInterval(timer);
        await checking;
        if (controller.signal.aborted) throw cancelled();
        return { id: mine.id, etag: await etag };
      },
      recorded: () => (recorded = true),
      end: async () => {
        clearInterval(timer);
        if (recorded) {
          const key = localKey(session.pk, session.id, mine.operation_id);
          if (this.local.get(key) === controller) this.local.delete(key);
          return;
        }
        await leave();
      },
    };
  }

  /** Marks a running turn of the session cancelled (the cancel endpoint); aborts it at once when it runs here. */
  async cancel(owner: string, sessionId: string, operationId: string): Promise<void> {
    this.local.get(localKey(owner, sessionId, operationId))?.abort(cancelled());
    await this.turns
      .patch(owner, turnId(operationId), [{ op: 'set', path: 'cancel', value: true }])
      .catch(() => undefined);
  }
}
