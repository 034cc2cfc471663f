// Read-modify-write with optimistic concurrency: the one loop every repository uses for updates.
import {
  ConflictError,
  NotFoundError,
  PreconditionFailedError,
  type Container,
  type Doc,
  type PatchOp,
  type Stored,
} from './types.js';

/** Where a document is: its partition key and id. */
export interface DocumentKey {
  pk: string;
  id: string;
}

/**
 * Reads the document, applies `change` and writes it back only if nobody wrote in between (ETag);
 * on a conflict it reads again and retries, so concurrent writers never lose an update. `change`
 * receives undefined for a missing document and returns the new document, or undefined to write nothing.
 * `known`, a copy the caller has just read, saves the first read: its ETag guards the write all the same.
 */
export async function updateDocument<T extends Doc>(
  container: Container<T>,
  { pk, id }: DocumentKey,
  change: (current: Stored<T> | undefined) => T | undefined,
  options: { known?: Stored<T>; attempts?: number } = {},
): Promise<Stored<T> | undefined> {
  const attempts = options.attempts ?? 50;
  for (let attempt = 1; ; attempt++) {
    const current = attempt === 1 && options.known ? options.known : await container.read(pk, id);
    const next = change(current);
    if (next === undefined) return current;
    try {
      return current ? await container.replace(next, { ifMatch: current._etag }) : await container.create(next);
    } catch (e) {
      const raced = e instanceof PreconditionFailedError || (e instanceof ConflictError && !current);
      if (!raced || attempt >= attempts) throw e;
      // Back off a little, with jitter, so a crowd of writers spreads out.
      await new Promise((r) => setTimeout(r, Math.random() * Math.min(50, attempt * 2)));
    }
  }
}

/**
 * Atomic patch of a counter document, creating it as `initial` on first use: a patch of a missing document
 * creates it, and a create that lost the race to another writer patches again.
 */
export async function incrementCounter<T extends Doc>(
  container: Container<T>,
  { pk, id }: DocumentKey,
  { ops, initial }: { ops: readonly PatchOp[]; initial: T },
): Promise<Stored<T>> {
  for (;;) {
    try {
      return await container.patch(pk, id, ops);
    } catch (e) {
      if (!(e instanceof NotFoundError)) throw e;
    }
    try {
      return await container.create(initial);
    } catch (e) {
      if (!(e instanceof ConflictError)) throw e;
    }
  }
}
