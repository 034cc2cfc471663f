// One kind of document in a container that holds several (a session's messages beside the session, one
// resource type among all of them), as a container of its own: what it reads is checked to be of the kind
// (a document of another kind is not there), and what it writes is of the kind by its type. The kinds are
// told apart by a type guard, so no reader casts a container's documents to the kind it expects.
import { StoreError, type BatchOperation, type Container, type Doc, type Stored } from './types.js';

/** The documents of `inner` that `is` accepts. */
export function narrowed<T extends Doc, U extends T>(inner: Container<T>, is: (doc: T) => doc is U): Container<U> {
  /** A document the container wrote or read back for a write of the kind: of the kind, or the store is broken. */
  const written = (doc: Stored<T>): Stored<U> => {
    if (!is(doc)) throw new StoreError(`${inner.name}: ${doc.pk}/${doc.id} is not of the kind written`);
    return doc;
  };
  const batchOp = (op: BatchOperation<U>): BatchOperation<T> => {
    if (op.op !== 'update') return op;
    // A document of another kind under the id is left as it is (undefined), never handed to `apply`.
    return {
      op: 'update',
      id: op.id,
      apply: (current) => (is(current) ? op.apply(current) : undefined),
      ...(op.known ? { known: op.known } : {}),
    };
  };
  return {
    name: inner.name,
    read: async (pk, id) => {
      const doc = await inner.read(pk, id);
      return doc && is(doc) ? doc : undefined;
    },
    create: async (doc) => written(await inner.create(doc)),
    createMany: (docs) => inner.createMany(docs),
    writeBatch: (pk, operations) => inner.writeBatch(pk, operations.map(batchOp)),
    upsert: async (doc, options) => written(await inner.upsert(doc, options)),
    replace: async (doc, options) => written(await inner.replace(doc, options)),
    delete: (pk, id, options) => inner.delete(pk, id, options),
    patch: async (pk, id, ops, options) => written(await inner.patch(pk, id, ops, options)),
    // A query names the kind in its filters (its partition, its type): a document of another kind is dropped.
    query: async (query) => {
      const page = await inner.query(query);
      const items: Stored<U>[] = [];
      for (const doc of page.items) if (is(doc)) items.push(doc);
      return { ...page, items };
    },
    aggregate: (query) => inner.aggregate(query),
  };
}
