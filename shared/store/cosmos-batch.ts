// A Cosmos container's batch writes (writeBatch): each a transactional batch of one partition, its updates
// replaces guarded by the ETag of the version they were made from. Batches updating the same documents are
// queued and the waiting ones merged, so a busy document costs a round trip per group of writes.
import type { Container as SdkContainer, OperationInput } from '@azure/cosmos';
import { mapError } from './cosmos-errors.js';
import { itemBody } from './cosmos-items.js';
import { NotFoundError, StoreError, inBatch, type BatchOperation, type Doc, type Stored } from './types.js';

/** The container a batch writer writes to. */
export interface BatchTarget<T extends Doc> {
  sdk: SdkContainer;
  name: string;
  /** A document as stored now (an update made from it is checked against its ETag). */
  read: (pk: string, id: string) => Promise<Stored<T> | undefined>;
}

/** The versions a batch wrote of the documents it updated, by id. */
type Written<T extends Doc> = Map<string, Stored<T>>;

/** A batch waiting for the one before it on the same documents, and how to answer its caller. */
interface Waiting<T extends Doc> {
  operations: readonly BatchOperation<T>[];
  done: (error?: Error) => void;
}

/** Where a batch's updates start from when first tried. */
interface Start<T extends Doc> {
  /** Whether the callers' copies may be older than the versions the batch before wrote. */
  stale: boolean;
  /** The versions the batch before wrote, used in place of a read when `stale`. */
  left?: Written<T> | undefined;
}

/**
 * Updates of a document from this process wait for the batch before them. What waits meanwhile is
 * written next as one batch (the updates of the document applied in turn, up to 100 operations), starting
 * from the versions the batch before wrote instead of reading them again: the turns of a busy session cost
 * a round trip per group, not two per turn. Another writer's change in between fails the ETag check, and
 * that attempt reads again; a group refused as a whole (one turn's document taken, say) is written again
 * turn by turn, so each gets its own answer.
 */
export class BatchWriter<T extends Doc> {
  private readonly waiting = new Map<string, Waiting<T>[]>();

  constructor(private readonly target: BatchTarget<T>) {}

  write(pk: string, operations: readonly BatchOperation<T>[]): Promise<void> {
    if (operations.length > 100) return Promise.reject(new StoreError('A batch holds at most 100 documents'));
    const updated = operations.flatMap((o) => (o.op === 'update' ? [o.id] : []));
    if (updated.length === 0) return this.batch(pk, operations, { stale: false }).then(() => undefined);
    const key = JSON.stringify([pk, ...updated.sort()]);
    return new Promise<void>((resolve, reject) => {
      const entry: Waiting<T> = { operations, done: (e) => (e === undefined ? resolve() : reject(e)) };
      const queue = this.waiting.get(key);
      if (queue) return void queue.push(entry);
      this.waiting.set(key, []);
      void this.drain(key, pk, entry);
    });
  }

  /** Writes one key's updates: the first alone (with its caller's copy), then each group that waited. */
  private async drain(key: string, pk: string, first: Waiting<T>): Promise<void> {
    let left = await this.writeGroup(pk, [first], { stale: false, left: undefined });
    for (let queue = this.waiting.get(key); queue && queue.length > 0; queue = this.waiting.get(key)) {
      left = await this.writeGroup(pk, takeGroup(queue), { stale: true, left });
    }
    this.waiting.delete(key);
  }

  /** Answers each of the group; gives the versions its last successful batch wrote. */
  private async writeGroup(pk: string, group: readonly Waiting<T>[], start: Start<T>): Promise<Written<T> | undefined> {
    const { stale } = start;
    let left = start.left;
    if (group.length > 1) {
      try {
        const written = await this.batch(pk, mergeGroup(group), { stale, left });
        for (const g of group) g.done();
        return written;
      } catch {
        // Refused as a whole: each on its own below, from a fresh read.
        left = undefined;
      }
    }
    for (const g of group) {
      try {
        left = await this.batch(pk, g.operations, { stale: stale || group.length > 1, left });
        g.done();
      } catch (e) {
        left = undefined;
        g.done(e instanceof Error ? e : new StoreError('The batch write failed'));
      }
    }
    return left;
  }

  /** Writes the batch; answers the versions of the updated documents it wrote. */
  private async batch(pk: string, operations: readonly BatchOperation<T>[], start: Start<T>): Promise<Written<T>> {
    const { stale, left } = start;
    const { sdk, name } = this.target;
    for (let attempt = 1; ; attempt++) {
      // Updates become replaces guarded by the ETag of the version just read.
      const writes: { op: BatchOperation<T>; body: OperationInput; updated?: T }[] = [];
      for (const o of operations) {
        if (o.op === 'create')
          writes.push({
            op: o,
            body: { operationType: 'Create', resourceBody: itemBody(inBatch(o.doc, pk)) },
          });
        else if (o.op === 'replace') writes.push({ op: o, body: replaceInput(inBatch(o.doc, pk), o.ifMatch) });
        else if (o.op === 'delete')
          writes.push({
            op: o,
            body: {
              operationType: 'Delete',
              id: o.id,
              partitionKey: pk,
              ...(o.ifMatch !== undefined ? { ifMatch: o.ifMatch } : {}),
            },
          });
        else {
          const first = attempt === 1 ? (stale ? left?.get(o.id) : o.known) : undefined;
          const current = first ?? (await this.target.read(pk, o.id));
          if (!current) throw new NotFoundError(`${name}/${pk}/${o.id} not found`);
          const next = o.apply(current);
          if (next) writes.push({ op: o, body: replaceInput(inBatch(next, pk, o.id), current._etag), updated: next });
        }
      }
      if (writes.length === 0) return new Map();
      let response;
      try {
        response = await sdk.items.batch(
          writes.map((w) => w.body),
          pk,
        );
      } catch (e) {
        throw mapError(e, name);
      }
      // A failed batch answers per operation: the failing one's status, 424 for the others (nothing written).
      const statuses = response.result?.map((r) => r.statusCode) ?? [response.code ?? 500];
      if (statuses.every((s) => s < 400)) {
        const written: Written<T> = new Map();
        writes.forEach((w, i) => {
          const etag = response.result?.[i]?.eTag;
          if (w.updated && etag) written.set(w.updated.id, { ...w.updated, _etag: etag });
        });
        return written;
      }
      const failing = statuses.findIndex((s) => s >= 400 && s !== 424);
      const code = statuses[failing] ?? 424;
      // An update raced by another writer: read again and run the batch again, after a short jittered wait.
      if (code === 412 && writes[failing]?.op.op === 'update' && attempt < 20) {
        await new Promise((r) => setTimeout(r, Math.random() * Math.min(50, attempt * 2)));
        continue;
      }
      if (code === 409 || code === 412 || code === 404) throw mapError({ code }, `${name}/${pk} (batch)`);
      throw new StoreError(`Batch write failed with status ${code}`);
    }
  }
}

const replaceInput = (doc: Doc, ifMatch: string | undefined): OperationInput => ({
  operationType: 'Replace',
  id: doc.id,
  partitionKey: doc.pk,
  resourceBody: itemBody(doc),
  ...(ifMatch !== undefined ? { ifMatch } : {}),
});

/** The next group from the front of a queue: as many waiting batches as fit in one (100 operations). */
function takeGroup<T extends Doc>(queue: Waiting<T>[]): Waiting<T>[] {
  let n = 1;
  for (
    let ops = queue[0]?.operations.length ?? 0;
    n < queue.length && ops + (queue[n]?.operations.length ?? 0) <= 100;
    n++
  )
    ops += queue[n]?.operations.length ?? 0;
  return queue.splice(0, n);
}

/**
 * One batch of a group: each updated document once, its updates applied in turn, then every other operation
 * in order. The updates come first: a stale ETag (another writer came first) then fails the batch before
 * anything else in it, on the local Cosmos-compatible server too, which does not roll a batch back.
 */
function mergeGroup<T extends Doc>(group: readonly Waiting<T>[]): BatchOperation<T>[] {
  const updates = new Map<string, ((current: Stored<T>) => T | undefined)[]>();
  const rest: BatchOperation<T>[] = [];
  for (const o of group.flatMap((g) => g.operations)) {
    if (o.op === 'update') updates.set(o.id, [...(updates.get(o.id) ?? []), o.apply]);
    else rest.push(o);
  }
  const composed = [...updates].map(([id, applies]): BatchOperation<T> => ({
    op: 'update',
    id,
    apply: (current) => {
      let doc = current;
      let changed = false;
      for (const apply of applies) {
        const next = apply(doc);
        if (next) [doc, changed] = [{ ...next, _etag: current._etag }, true];
      }
      return changed ? doc : undefined;
    },
  }));
  return [...composed, ...rest];
}
