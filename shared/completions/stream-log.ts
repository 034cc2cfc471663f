// The events of a background streamed completion, kept in the store so that the stream can be replayed
// (Last-Event-ID) and followed live on any instance, and cancelled from any instance. Events are written
// in batches (at most every FLUSH_MS, or every FLUSH_EVENTS events; the last at once, in one write with the
// stream's end), never one write per token; the container expires them an hour after the last write.
import { ownerKey, type Principal } from '../auth/principal.js';
import { conflict, notFound } from '../errors.js';
import { ConflictError, type Container, type Doc, type Stored } from '../store/types.js';
import { updateDocument } from '../store/update.js';
import { operationKey } from './operations.js';
import type { Log } from '../log.js';
import type { DocumentStore } from '../store/types.js';

/** What this module uses of the service (the hosts pass the whole of it). */
export interface StreamLogDeps {
  readonly log: Log;
  readonly store: DocumentStore;
}

export const FLUSH_MS = 500;
export const FLUSH_EVENTS = 64;
/** How often the writer reads whether its stream was cancelled elsewhere, and (every HEARTBEAT_MS) says it is alive. */
const CHECK_MS = 500;
const HEARTBEAT_MS = 10_000;
/** A running stream whose writer has not said it is alive for this long has lost its writer. */
const STALE_MS = 3 * HEARTBEAT_MS;
/** How often a replay looks for new events. */
const POLL_MS = 100;

interface HeadDoc extends Doc {
  kind: 'head';
  owner: string;
  operation_id: string;
  session_id: string | null;
  status: 'running' | 'completed' | 'failed';
  cancel?: boolean;
  beat: number;
}

interface ChunkDoc extends Doc {
  kind: 'events';
  /** The sequence number of the first event. */
  first: number;
  /** Each event as sent: `id:`, `event:` and `data:` lines. */
  events: string[];
}

type StreamDoc = HeadDoc | ChunkDoc;

declare module '../store/types.js' {
  interface StoredDocs {
    streams: StreamDoc;
  }
}

const container = (s: StreamLogDeps) => s.store.container('streams');
const HEAD = 'head';
const chunkId = (first: number) => `e${String(first).padStart(10, '0')}`;
const isTerminal = (event: string) => /^event: (completed|error)$/m.test(event);

/** The writer of one stream's events. */
export class StreamLog {
  private pending: string[] = [];
  private first = 1;
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();
  private readonly watch: NodeJS.Timeout;
  private beatAt = Date.now();
  private readonly log: StreamLogDeps['log'];

  private constructor(
    private readonly events: Container<StreamDoc>,
    private readonly key: string,
    { onCancel, log }: { onCancel: () => void; log: StreamLogDeps['log'] },
  ) {
    this.log = log;
    this.watch = setInterval(() => {
      void (async () => {
        const beat = Date.now() - this.beatAt >= HEARTBEAT_MS;
        const head = beat
          ? await updateDocument(this.events, { pk: key, id: HEAD }, (h) =>
              h?.kind === 'head' ? { ...h, beat: Date.now() } : undefined,
            )
          : await this.events.read(key, HEAD);
        if (beat) this.beatAt = Date.now();
        if (head?.kind === 'head' && head.cancel) onCancel();
      })().catch(() => undefined);
    }, CHECK_MS);
    this.watch.unref();
  }

  /** Starts the log of the caller's operation; 409 when the operation id was streamed before. */
  static async open(
    s: StreamLogDeps,
    principal: Principal,
    { operationId, sessionId, onCancel }: { operationId: string; sessionId: string | undefined; onCancel: () => void },
  ): Promise<StreamLog> {
    const key = operationKey(principal.upn, operationId);
    const head: HeadDoc = {
      id: HEAD,
      pk: key,
      kind: 'head',
      owner: ownerKey(principal.upn),
      operation_id: operationId,
      session_id: sessionId ?? null,
      status: 'running',
      beat: Date.now(),
    };
    try {
      await container(s).create(head);
    } catch (e) {
      if (e instanceof ConflictError) throw conflict(`Operation ${operationId} already exists`);
      throw e;
    }
    return new StreamLog(container(s), key, { onCancel, log: s.log });
  }

  /** Adds an event (numbered already); the batch is written within FLUSH_MS, a final event at once. */
  push(event: string): void {
    this.pending.push(event);
    if (isTerminal(event)) return void this.flush(/^event: completed$/m.test(event) ? 'completed' : 'failed');
    if (this.pending.length >= FLUSH_EVENTS) return void this.flush();
    this.timer ??= setTimeout(() => void this.flush(), FLUSH_MS);
  }

  /** Writes what is pending, in order; `end` marks the stream ended after its last events. */
  private flush(end?: HeadDoc['status']): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const events = this.pending;
    this.pending = [];
    const first = this.first;
    this.first += events.length;
    this.writing = this.writing
      .then(async () => {
        const chunk =
          events.length > 0
            ? [
                {
                  op: 'create' as const,
                  doc: { id: chunkId(first), pk: this.key, kind: 'events' as const, first, events },
                },
              ]
            : [];
        if (!end) {
          if (chunk[0]) await this.events.create(chunk[0].doc);
          return;
        }
        clearInterval(this.watch);
        const ended = (h: Stored<StreamDoc>) =>
          h.kind === 'head' ? { ...h, status: end, beat: Date.now() } : undefined;
        await this.events.writeBatch(this.key, [...chunk, { op: 'update', id: HEAD, apply: ended }]);
      })
      .catch((e: unknown) =>
        this.log.warn('Stream events were not kept', { error: e instanceof Error ? e.message : String(e) }),
      );
    return this.writing;
  }
}

/** The caller's stream head; anyone else's, or an unknown one, is 404. */
async function headOf(s: StreamLogDeps, principal: Principal, operationId: string): Promise<HeadDoc> {
  const key = operationKey(principal.upn, operationId);
  const head = await container(s).read(key, HEAD);
  if (head?.kind !== 'head' || head.owner !== ownerKey(principal.upn))
    throw notFound(`Stream ${operationId} not found`);
  return head;
}

/**
 * The events after `after` (a Last-Event-ID; all when undefined), then live ones until the final event.
 * A stream whose writer stopped (its instance died) ends with an `error` event, code StreamInterrupted.
 */
export async function replay(
  s: StreamLogDeps,
  principal: Principal,
  { operationId, after }: { operationId: string; after: number },
): Promise<AsyncGenerator<string>> {
  const key = (await headOf(s, principal, operationId)).pk;
  const events = container(s);
  async function* follow(): AsyncGenerator<string> {
    let next = after + 1;
    let endSeen = false;
    for (;;) {
      const { items } = await events.query({
        partition: key,
        where: [
          { field: 'kind', op: 'eq', value: 'events' },
          { field: 'first', op: 'gt', value: next - FLUSH_EVENTS - 1 },
        ],
        orderBy: [{ field: 'first' }],
      });
      for (const chunk of items) {
        if (chunk.kind !== 'events') continue;
        for (const [i, event] of chunk.events.entries()) {
          if (chunk.first + i < next) continue;
          next = chunk.first + i + 1;
          yield event;
          if (isTerminal(event)) return;
        }
      }
      const head = await events.read(key, HEAD);
      if (head?.kind !== 'head') return;
      if (head.status === 'running' && Date.now() - head.beat > STALE_MS) {
        const error = { code: 'StreamInterrupted', message: 'The instance running the completion stopped' };
        yield `id: ${next}\nevent: error\ndata: ${JSON.stringify({ error })}\n\n`;
        return;
      }
      // Ended: the final events were written with the end, perhaps after this pass's query; one more query
      // finds them, and a stream that ended without a final event ends here after it.
      if (head.status !== 'running') {
        if (endSeen) return;
        endSeen = true;
        continue;
      }
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  }
  return follow();
}

/** Asks the caller's background stream to stop, on whatever instance runs it; how it stands after. */
export async function requestCancel(
  s: StreamLogDeps,
  principal: Principal,
  operationId: string,
): Promise<{ status: 'Cancelled' | 'Completed' | 'Failed'; sessionId: string | null }> {
  const head = await headOf(s, principal, operationId);
  if (head.status !== 'running')
    return { status: head.status === 'completed' ? 'Completed' : 'Failed', sessionId: head.session_id };
  await updateDocument(container(s), { pk: head.pk, id: HEAD }, (h) =>
    h?.kind === 'head' && h.status === 'running' && !h.cancel ? { ...h, cancel: true } : undefined,
  );
  return { status: 'Cancelled', sessionId: head.session_id };
}
