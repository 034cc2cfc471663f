// One contract, two adapters: the embedded SQLite store and the Cosmos store against a local
// Cosmos-compatible server. Cases that server cannot run are skipped there, with the reason.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { updateDocument } from '../../../shared/store/update.js';
import {
  ConflictError,
  NotFoundError,
  PreconditionFailedError,
  StoreError,
  type Container,
  type Doc,
  type DocumentStore,
} from '../../../shared/store/types.js';
import { STORES } from '../../support/stores.js';
import { rawContainer } from '../../support/raw-container.js';

interface Item extends Doc {
  name: string;
  n: number;
  tags: string[];
  active: boolean;
  meta: { kind: string; size?: number };
  day?: string;
}

const item = (pk: string, id: string, n: number, extra: Partial<Item> = {}): Item => ({
  id,
  pk,
  name: `item-${id}`,
  n,
  tags: n % 2 === 0 ? ['even'] : ['odd'],
  active: n % 3 !== 0,
  meta: { kind: n < 5 ? 'small' : 'large', size: n * 10 },
  ...extra,
});

describe.each(STORES)('document store contract: $name', (adapter) => {
  let store: DocumentStore;
  let c: Container<Item>;
  let q: Container<Item>;

  beforeAll(async () => {
    store = await adapter.open();
    c = rawContainer(store, 'resources');
    q = rawContainer(store, 'sessions');
    // A fixed data set for the query cases: pk a holds 0..5, pk b holds 6..9.
    for (let n = 0; n < 10; n++)
      await q.create(item(n < 6 ? 'a' : 'b', `q${n}`, n, { day: `2026-01-0${(n % 3) + 1}` }));
  });
  afterAll(() => store.close());

  describe('point operations', () => {
    it('reads back what it created, with an ETag, and undefined for a missing id', async () => {
      const created = await c.create(item('p1', 'one', 1));
      expect(created._etag).toBeTruthy();
      const read = await c.read('p1', 'one');
      expect(read).toMatchObject({ id: 'one', pk: 'p1', name: 'item-one', meta: { kind: 'small', size: 10 } });
      expect(read?._etag).toBe(created._etag);
      expect(await c.read('p1', 'nope')).toBeUndefined();
      expect(await c.read('other', 'one')).toBeUndefined();
    });

    it('refuses to create a duplicate id in a partition, but allows it in another', async () => {
      await c.create(item('p2', 'dup', 1));
      await expect(c.create(item('p2', 'dup', 2))).rejects.toBeInstanceOf(ConflictError);
      await expect(c.create(item('p3', 'dup', 3))).resolves.toMatchObject({ pk: 'p3' });
      expect((await c.read('p2', 'dup'))?.n).toBe(1);
    });

    it('replaces only with the current ETag and changes the ETag on every write', async () => {
      const v1 = await c.create(item('p4', 'r', 1));
      const v2 = await c.replace({ ...v1, n: 2 }, { ifMatch: v1._etag });
      expect(v2._etag).not.toBe(v1._etag);
      await expect(c.replace({ ...v1, n: 3 }, { ifMatch: v1._etag })).rejects.toBeInstanceOf(PreconditionFailedError);
      expect((await c.read('p4', 'r'))?.n).toBe(2);
      await expect(c.replace(item('p4', 'missing', 1))).rejects.toBeInstanceOf(NotFoundError);
    });

    it('upserts: creates, overwrites, and honours ifMatch', async () => {
      const a = await c.upsert(item('p5', 'u', 1));
      const b = await c.upsert({ ...a, n: 5 });
      expect((await c.read('p5', 'u'))?.n).toBe(5);
      await expect(c.upsert({ ...a, n: 9 }, { ifMatch: a._etag })).rejects.toBeInstanceOf(PreconditionFailedError);
      await expect(c.upsert({ ...a, n: 6 }, { ifMatch: b._etag })).resolves.toMatchObject({ n: 6 });
    });

    it('deletes once, reports a missing document, and honours ifMatch', async () => {
      const d = await c.create(item('p6', 'd', 1));
      await c.replace({ ...d, n: 2 });
      await expect(c.delete('p6', 'd', { ifMatch: d._etag })).rejects.toBeInstanceOf(PreconditionFailedError);
      expect(await c.delete('p6', 'd')).toBe(true);
      expect(await c.delete('p6', 'd')).toBe(false);
      expect(await c.read('p6', 'd')).toBeUndefined();
    });

    it('creates many documents at once, and reports ones that already exist without touching them', async () => {
      await c.createMany(Array.from({ length: 250 }, (_, i) => item(`bulk-${i % 3}`, `b${i}`, i)));
      expect((await c.query({ partition: 'bulk-1' })).items).toHaveLength(83);
      expect((await c.read('bulk-2', 'b5'))?.n).toBe(5);
      await expect(c.createMany([item('bulk-0', 'b0', 100), item('bulk-0', 'new', 7)])).rejects.toBeInstanceOf(
        ConflictError,
      );
      expect((await c.read('bulk-0', 'b0'))?.n).toBe(0);
      expect((await c.read('bulk-0', 'new'))?.n).toBe(7);
    });

    it(
      'writes a few documents of one partition in one batch, and refuses the batch on a taken id, a stale ETag ' +
        'or a missing document',
      async () => {
        const create = (d: Item) => ({ op: 'create' as const, doc: d });
        await c.writeBatch('batch', [create(item('batch', 'x', 1)), create(item('batch', 'y', 2))]);
        expect((await c.query({ partition: 'batch' })).items.map((d) => d.id).sort()).toEqual(['x', 'y']);
        const y = (await c.read('batch', 'y'))!;
        await c.writeBatch('batch', [
          create(item('batch', 'v', 4)),
          { op: 'replace', doc: { ...y, n: 20 }, ifMatch: y._etag },
        ]);
        expect((await c.read('batch', 'y'))?.n).toBe(20);
        await expect(
          c.writeBatch('batch', [create(item('batch', 'z', 3)), create(item('batch', 'x', 9))]),
        ).rejects.toBeInstanceOf(ConflictError);
        await expect(
          c.writeBatch('batch', [
            create(item('batch', 'w', 3)),
            { op: 'replace', doc: { ...y, n: 30 }, ifMatch: y._etag },
          ]),
        ).rejects.toBeInstanceOf(PreconditionFailedError);
        await expect(c.writeBatch('batch', [{ op: 'replace', doc: item('batch', 'gone', 1) }])).rejects.toBeInstanceOf(
          NotFoundError,
        );
        expect((await c.read('batch', 'x'))?.n).toBe(1);
        expect((await c.read('batch', 'y'))?.n).toBe(20);
        // Real Cosmos DB and SQLite write none of a refused batch; the local Cosmos-compatible server is not atomic.
        if (adapter.name === 'embedded')
          expect([await c.read('batch', 'z'), await c.read('batch', 'w')]).toEqual([undefined, undefined]);
        await expect(c.writeBatch('batch', [create(item('other', 'o', 1))])).rejects.toBeInstanceOf(StoreError);
      },
    );

    it('deletes in a batch, refusing the batch when the document is gone or its ETag is stale', async () => {
      const create = (d: Item) => ({ op: 'create' as const, doc: d });
      await c.writeBatch('bd', [create(item('bd', 'a', 1)), create(item('bd', 'b', 2))]);
      const a = (await c.read('bd', 'a'))!;
      await c.writeBatch('bd', [create(item('bd', 'c', 3)), { op: 'delete', id: 'a', ifMatch: a._etag }]);
      expect((await c.query({ partition: 'bd' })).items.map((d) => d.id).sort()).toEqual(['b', 'c']);
      const b = (await c.read('bd', 'b'))!;
      await c.patch('bd', 'b', [{ op: 'set', path: 'n', value: 5 }]);
      await expect(
        c.writeBatch('bd', [create(item('bd', 'd', 4)), { op: 'delete', id: 'b', ifMatch: b._etag }]),
      ).rejects.toBeInstanceOf(PreconditionFailedError);
      await expect(c.writeBatch('bd', [{ op: 'delete', id: 'gone' }])).rejects.toBeInstanceOf(NotFoundError);
      expect((await c.read('bd', 'b'))?.n).toBe(5);
      if (adapter.name === 'embedded') expect(await c.read('bd', 'd')).toBeUndefined();
    });

    it('patches with set, incr, append and remove', async () => {
      await c.create(item('p7', 'pt', 1));
      const patched = await c.patch('p7', 'pt', [
        { op: 'set', path: 'meta.kind', value: 'patched' },
        { op: 'incr', path: 'n', value: 41 },
        { op: 'append', path: 'tags', value: 'new' },
        { op: 'remove', path: 'meta.size' },
      ]);
      expect(patched).toMatchObject({ n: 42, tags: ['odd', 'new'], meta: { kind: 'patched' } });
      expect(patched.meta).not.toHaveProperty('size');
      expect(await c.read('p7', 'pt')).toMatchObject({ n: 42, tags: ['odd', 'new'] });
      await expect(c.patch('p7', 'missing', [{ op: 'incr', path: 'n', value: 1 }])).rejects.toBeInstanceOf(
        NotFoundError,
      );
      await expect(
        c.patch('p7', 'pt', [{ op: 'incr', path: 'n', value: 1 }], { ifMatch: '"stale"' }),
      ).rejects.toBeInstanceOf(PreconditionFailedError);
    });
  });

  describe('concurrency', () => {
    it('gives the slower of two racing writers a conflict, and loses no update when it retries', async () => {
      const start = await c.create(item('race', 'counter', 0));
      // Both writers read the same version.
      const [w1, w2] = [structuredClone(start), structuredClone(start)];
      await c.replace({ ...w1, n: w1.n + 1, tags: [...w1.tags, 'w1'] }, { ifMatch: w1._etag });
      await expect(
        c.replace({ ...w2, n: w2.n + 1, tags: [...w2.tags, 'w2'] }, { ifMatch: w2._etag }),
      ).rejects.toBeInstanceOf(PreconditionFailedError);
      // The loser re-reads and retries through the shared loop.
      await updateDocument(
        c,
        { pk: 'race', id: 'counter' },
        (cur) => cur && { ...cur, n: cur.n + 1, tags: [...cur.tags, 'w2'] },
      );
      expect(await c.read('race', 'counter')).toMatchObject({ n: 2, tags: ['even', 'w1', 'w2'] });
    });

    it('keeps every one of 25 concurrent read-modify-write increments', async () => {
      await c.create(item('race', 'many', 0));
      await Promise.all(
        Array.from({ length: 25 }, (_, i) =>
          updateDocument(
            c,
            { pk: 'race', id: 'many' },
            (cur) => cur && { ...cur, n: cur.n + 1, tags: [...cur.tags, `t${i}`] },
          ),
        ),
      );
      const final = await c.read('race', 'many');
      expect(final?.n).toBe(25);
      expect(new Set(final?.tags).size).toBe(26);
    });

    it(
      'keeps writes asked for together independent: a refused batch among them stores nothing, the others all ' +
        'hold',
      async () => {
        await c.create(item('together', 'taken', 0));
        const results = await Promise.allSettled([
          c.create(item('together', 'a', 1)),
          c.writeBatch('together', [
            { op: 'create', doc: item('together', 'b', 2) },
            { op: 'create', doc: item('together', 'taken', 9) },
          ]),
          c.upsert(item('together', 'c', 3)),
          c.create(item('together', 'taken', 8)),
        ]);
        expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'rejected']);
        expect((await c.read('together', 'taken'))?.n).toBe(0);
        if (adapter.name === 'embedded') expect(await c.read('together', 'b')).toBeUndefined();
        expect([(await c.read('together', 'a'))?.n, (await c.read('together', 'c'))?.n]).toEqual([1, 3]);
      },
    );

    it(
      'answers each of concurrent batches updating one document on its own: a refused one stores nothing of it, ' +
        'the others all hold',
      async () => {
        const known = await c.create(item('grouped', 'session', 0));
        await c.create(item('grouped', 'taken', 0));
        const turn = (i: number, id = `g${i}`) =>
          c.writeBatch('grouped', [
            {
              op: 'update',
              id: 'session',
              known,
              apply: (cur) => ({ ...cur, n: cur.n + 1, tags: [...cur.tags, `t${i}`] }),
            },
            { op: 'create', doc: item('grouped', id, i) },
          ]);
        const results = await Promise.allSettled([turn(0), turn(1), turn(2), turn(3, 'taken'), turn(4), turn(5)]);
        expect(results[3].status === 'rejected' && results[3].reason).toBeInstanceOf(ConflictError);
        expect((await c.read('grouped', 'taken'))?.n).toBe(0);
        // The Cosmos-compatible server these tests run against does not roll back a refused batch (Cosmos DB
        // does): what the batches written together did before the refusal stays there, so the rest is checked
        // on the embedded store only.
        if (adapter.name !== 'embedded') return;
        expect(results.map((r) => r.status)).toEqual([
          'fulfilled',
          'fulfilled',
          'fulfilled',
          'rejected',
          'fulfilled',
          'fulfilled',
        ]);
        const session = await c.read('grouped', 'session');
        expect(session?.n).toBe(5);
        expect([...(session?.tags ?? [])].sort()).toEqual(
          ['t0', 't1', 't2', 't4', 't5', ...item('grouped', 'x', 0).tags].sort(),
        );
        expect(await c.read('grouped', 'g3')).toBeUndefined();
      },
    );

    it('applies a batch update to the version it writes over: 100 concurrent batches lose none of theirs', async () => {
      // Every writer passes the copy it read first: all but one find it stale.
      const known = await c.create(item('turns', 'session', 0));
      await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          c.writeBatch('turns', [
            {
              op: 'update',
              id: 'session',
              known,
              apply: (cur) => ({ ...cur, n: cur.n + 1, tags: [...cur.tags, `t${i}`] }),
            },
            { op: 'create', doc: item('turns', `m${i}`, i) },
          ]),
        ),
      );
      const session = await c.read('turns', 'session');
      expect(session?.n).toBe(100);
      expect(new Set(session?.tags).size).toBe(101);
      expect((await c.query({ partition: 'turns' })).items).toHaveLength(101);
      // Nothing to change: the update writes nothing (the ETag stays), the rest of the batch is written.
      await c.writeBatch('turns', [
        { op: 'update', id: 'session', apply: () => undefined },
        { op: 'create', doc: item('turns', 'quiet', 1) },
      ]);
      expect((await c.read('turns', 'session'))?._etag).toBe(session?._etag);
      expect(await c.read('turns', 'quiet')).toBeDefined();
      await expect(c.writeBatch('turns', [{ op: 'update', id: 'gone', apply: (cur) => cur }])).rejects.toBeInstanceOf(
        NotFoundError,
      );
      await expect(
        c.writeBatch('turns', [{ op: 'update', id: 'session', apply: (cur) => ({ ...cur, id: 'other' }) }]),
      ).rejects.toBeInstanceOf(StoreError);
    });

    it('starts each batch update from the stored version, after other writes and after a failed batch', async () => {
      const seen: number[] = [];
      const bump = {
        op: 'update' as const,
        id: 'doc',
        apply: (cur: Item) => (seen.push(cur.n), { ...cur, n: cur.n + 1 }),
      };
      await c.create(item('busy', 'doc', 0));
      await c.writeBatch('busy', [bump]);
      await c.writeBatch('busy', [bump]);
      // Another way in: the next update starts from what it wrote.
      await c.upsert(item('busy', 'doc', 10));
      await c.writeBatch('busy', [bump]);
      expect(seen).toEqual([0, 1, 10]);
      // A batch refused as a whole (its create is taken): the next update starts from what is stored, which
      // is the version before it (the local Cosmos-compatible server keeps what a refused batch did).
      await expect(c.writeBatch('busy', [bump, { op: 'create', doc: item('busy', 'doc', 99) }])).rejects.toBeInstanceOf(
        ConflictError,
      );
      const stored = (await c.read('busy', 'doc'))?.n;
      if (adapter.name === 'embedded') expect(stored).toBe(11);
      await c.writeBatch('busy', [bump]);
      expect(seen.at(-1)).toBe(stored);
      expect((await c.read('busy', 'doc'))?.n).toBe((stored ?? NaN) + 1);
    });

    it('creates a missing document once when writers race to create it', async () => {
      await Promise.all(
        Array.from({ length: 10 }, () =>
          updateDocument(c, { pk: 'race', id: 'fresh' }, (cur) =>
            cur ? { ...cur, n: cur.n + 1 } : item('race', 'fresh', 1),
          ),
        ),
      );
      expect((await c.read('race', 'fresh'))?.n).toBe(10);
    });
  });

  describe('queries', () => {
    const ids = (items: { id: string }[]) => items.map((i) => i.id).sort();

    it('filters by partition and by each operator, on nested fields too', async () => {
      expect(ids((await q.query({ partition: 'b' })).items)).toEqual(['q6', 'q7', 'q8', 'q9']);
      const where = async (w: Parameters<typeof q.query>[0]['where']) => ids((await q.query({ where: w ?? [] })).items);
      expect(await where([{ field: 'n', op: 'eq', value: 3 }])).toEqual(['q3']);
      expect(await where([{ field: 'n', op: 'ge', value: 8 }])).toEqual(['q8', 'q9']);
      expect(
        await where([
          { field: 'n', op: 'lt', value: 2 },
          { field: 'n', op: 'ne', value: 0 },
        ]),
      ).toEqual(['q1']);
      expect(await where([{ field: 'n', op: 'in', value: [1, 4, 7] }])).toEqual(['q1', 'q4', 'q7']);
      expect(
        await where([
          { field: 'meta.kind', op: 'eq', value: 'large' },
          { field: 'n', op: 'le', value: 6 },
        ]),
      ).toEqual(['q5', 'q6']);
      expect(await where([{ field: 'name', op: 'startsWith', value: 'item-q1' }])).toEqual(['q1']);
      expect(
        await where([
          { field: 'name', op: 'includes', value: 'm-q' },
          { field: 'n', op: 'lt', value: 2 },
        ]),
      ).toEqual(['q0', 'q1']);
      expect(await where([{ field: 'name', op: 'includes', value: 'M-Q' }])).toEqual([]);
      expect(
        await where([
          { field: 'tags', op: 'contains', value: 'odd' },
          { field: 'n', op: 'gt', value: 5 },
        ]),
      ).toEqual(['q7', 'q9']);
      expect(await where([{ field: 'active', op: 'eq', value: false }])).toEqual(['q0', 'q3', 'q6', 'q9']);
      expect(
        await where([
          { field: 'day', op: 'exists' },
          { field: 'n', op: 'eq', value: 2 },
        ]),
      ).toEqual(['q2']);
      expect(
        await where([
          { field: 'meta.missing', op: 'missing' },
          { field: 'n', op: 'eq', value: 2 },
        ]),
      ).toEqual(['q2']);
    });

    it('orders and pages with continuation tokens, without repeats or gaps', async () => {
      const desc = await q.query({ orderBy: [{ field: 'n', direction: 'desc' }] });
      expect(desc.items.map((i) => i.n)).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
      const seen: number[] = [];
      let continuation: string | undefined;
      let pages = 0;
      do {
        const page = await q.query({
          partition: 'a',
          orderBy: [{ field: 'n' }],
          limit: 4,
          ...(continuation ? { continuation } : {}),
        });
        seen.push(...page.items.map((i) => i.n));
        continuation = page.continuation;
        pages++;
      } while (continuation && pages < 10);
      expect(seen).toEqual([0, 1, 2, 3, 4, 5]);
      expect(pages).toBe(2);
    });

    it('counts, sums and finds extremes', async () => {
      const [row] = await q.aggregate({
        where: [{ field: 'n', op: 'ge', value: 2 }],
        aggregates: {
          count: { fn: 'count' },
          total: { fn: 'sum', field: 'n' },
          low: { fn: 'min', field: 'n' },
          high: { fn: 'max', field: 'n' },
        },
      });
      expect(row).toEqual({ count: 8, total: 44, low: 2, high: 9 });
      const [empty] = await q.aggregate({
        where: [{ field: 'n', op: 'gt', value: 100 }],
        aggregates: { count: { fn: 'count' } },
      });
      expect(empty).toEqual({ count: 0 });
      const [inPartition] = await q.aggregate({ partition: 'b', aggregates: { count: { fn: 'count' } } });
      expect(inPartition).toEqual({ count: 4 });
    });

    it.skipIf(adapter.gaps.has('groupBy'))(
      'groups (GROUP BY: not run by the local Cosmos server, emitted SQL is unit-tested)',
      async () => {
        const rows = await q.aggregate({
          groupBy: ['day'],
          aggregates: { count: { fn: 'count' }, total: { fn: 'sum', field: 'n' } },
        });
        expect(rows.sort((x, y) => String(x.day).localeCompare(String(y.day)))).toEqual([
          { day: '2026-01-01', count: 4, total: 18 },
          { day: '2026-01-02', count: 3, total: 12 },
          { day: '2026-01-03', count: 3, total: 15 },
        ]);
      },
    );

    it.skipIf(adapter.gaps.has('countDistinct'))(
      'counts distinct values (DISTINCT: not run by the local Cosmos server)',
      async () => {
        const [all] = await q.aggregate({ aggregates: { kinds: { fn: 'countDistinct', field: 'meta.kind' } } });
        expect(all).toEqual({ kinds: 2 });
        const grouped = await q.aggregate({
          groupBy: ['pk'],
          aggregates: { days: { fn: 'countDistinct', field: 'day' } },
        });
        expect(grouped.sort((x, y) => String(x.pk).localeCompare(String(y.pk)))).toEqual([
          { pk: 'a', days: 3 },
          { pk: 'b', days: 3 },
        ]);
      },
    );

    it('refuses field paths that are not plain identifiers', async () => {
      await expect(q.query({ where: [{ field: 'n"] OR 1=1 --', op: 'eq', value: 1 }] })).rejects.toBeInstanceOf(
        StoreError,
      );
      await expect(q.aggregate({ aggregates: { 'x; DROP': { fn: 'count' } } })).rejects.toBeInstanceOf(StoreError);
    });
  });

  it.skipIf(adapter.gaps.has('ttl'))(
    'expires documents after their ttl (TTL: the local Cosmos server never expires items)',
    async () => {
      const quotas = rawContainer<Doc & { n: number }>(store, 'quotas');
      await quotas.create({ id: 'short', pk: 'ttl', n: 1, ttl: 1 });
      await quotas.create({ id: 'long', pk: 'ttl', n: 1, ttl: 3600 });
      expect(await quotas.read('ttl', 'short')).toBeDefined();
      await new Promise((r) => setTimeout(r, 1100));
      expect(await quotas.read('ttl', 'short')).toBeUndefined();
      expect((await quotas.query({ partition: 'ttl' })).items.map((i) => i.id)).toEqual(['long']);
    },
  );
});
