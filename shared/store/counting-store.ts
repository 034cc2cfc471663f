// A diagnostics wrapper that counts a store's round trips per container: tests and benchmarks assert that an
// operation's cost does not grow with the data.
import type { ContainerName } from './containers.js';
import type { Container, DocsOf, DocumentStore } from './types.js';

export interface Counts {
  reads: number;
  queries: number;
  writes: number;
}

/** Wraps a store, counting reads, queries (aggregates included) and writes per container. */
export function countingStore(inner: DocumentStore): DocumentStore & { counts: Map<string, Counts>; reset(): void } {
  const counts = new Map<string, Counts>();
  const of = (name: string) => {
    let c = counts.get(name);
    if (!c) counts.set(name, (c = { reads: 0, queries: 0, writes: 0 }));
    return c;
  };
  return {
    kind: inner.kind,
    counts,
    reset: () => counts.clear(),
    close: () => inner.close(),
    container<N extends ContainerName>(name: N): Container<DocsOf<N>> {
      const c = inner.container(name);
      const bump = (k: keyof Counts) => of(name)[k]++;
      return {
        name: c.name,
        read: (pk, id) => (bump('reads'), c.read(pk, id)),
        query: (q) => (bump('queries'), c.query(q)),
        aggregate: (q) => (bump('queries'), c.aggregate(q)),
        create: (d) => (bump('writes'), c.create(d)),
        createMany: (d) => (bump('writes'), c.createMany(d)),
        writeBatch: (pk, o) => (bump('writes'), c.writeBatch(pk, o)),
        upsert: (d, o) => (bump('writes'), c.upsert(d, o)),
        replace: (d, o) => (bump('writes'), c.replace(d, o)),
        delete: (pk, id, o) => (bump('writes'), c.delete(pk, id, o)),
        patch: (pk, id, ops, o) => (bump('writes'), c.patch(pk, id, ops, o)),
      };
    },
  };
}
