// One vector index contract, two adapters: sqlite-vec embedded, and Cosmos DB vector search against the local
// Cosmos-compatible server. That server runs no VectorDistance queries, so the searches are skipped there and
// say so; the Cosmos query text is checked in test/unit/shared/knowledge.test.ts.
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { COSMOS_VECTOR_DIMENSIONS, openCosmosVectorIndex } from '../../../shared/knowledge/cosmos-vector-index.js';
import { openSqliteVectorIndex } from '../../../shared/knowledge/sqlite-vector-index.js';
import type { IndexedDocument, Partition, VectorIndex } from '../../../shared/knowledge/vector-index.js';
import { tempDir } from '../../support/services.js';

interface Adapter {
  name: string;
  dimensions: number;
  open(): Promise<VectorIndex>;
  /** Why searches cannot run here, when they cannot. */
  noSearch?: string;
}

const ADAPTERS: Adapter[] = [
  // 12: not a whole number of bytes, which the embedded index's bit vectors need padding for.
  {
    name: 'embedded',
    dimensions: 12,
    open: () => Promise.resolve(openSqliteVectorIndex(path.join(tempDir(), 'knowledge.db'))),
  },
  {
    name: 'cosmos',
    dimensions: COSMOS_VECTOR_DIMENSIONS,
    open: () =>
      openCosmosVectorIndex({
        endpoint: inject('cosmosEndpoint'),
        key: 'local-test-key',
        database: `db-${randomUUID()}`,
        createContainers: true,
      }),
    noSearch: '@vercel/cosmosdb-server does not run VectorDistance',
  },
];

describe.each(ADAPTERS)('vector index contract: $name', (adapter) => {
  let index: VectorIndex;
  /** A unit vector pointing mostly along `axis`, a little along `axis + 1`. */
  const vec = (axis: number, lean = 0) => {
    const v = new Array<number>(adapter.dimensions).fill(0);
    v[axis] = Math.sqrt(1 - lean * lean);
    v[(axis + 1) % adapter.dimensions] = lean;
    return v;
  };
  const doc = (source: string, hash = 'h1', extra: Partial<IndexedDocument> = {}): IndexedDocument => ({
    source,
    file_name: source.split('/').pop() ?? source,
    title: `Title of ${source}`,
    origin: 'pipeline-a',
    hash,
    ...extra,
  });
  const parts = (...axes: number[]): Partition[] =>
    axes.map((a, i) => ({ text: `part ${i} on axis ${a}`, vector: vec(a) }));
  const search = adapter.noSearch ? it.skip : it;

  beforeAll(async () => {
    index = await adapter.open();
  });
  afterAll(async () => {
    await index.close();
  });

  it('lists the documents of an index with their hashes and partition counts, and no other index', async () => {
    await index.replaceDocument('lists', doc('docs/a.txt'), parts(0, 1));
    await index.replaceDocument('lists', doc('https://example.com/b.html', 'h2'), parts(2));
    await index.replaceDocument('lists-other', doc('docs/c.txt'), parts(3));
    const listed = (await index.documents('lists')).sort((a, b) => a.source.localeCompare(b.source));
    expect(listed).toEqual([
      {
        source: 'docs/a.txt',
        file_name: 'a.txt',
        title: 'Title of docs/a.txt',
        origin: 'pipeline-a',
        hash: 'h1',
        partitions: 2,
      },
      {
        source: 'https://example.com/b.html',
        file_name: 'b.html',
        title: 'Title of https://example.com/b.html',
        origin: 'pipeline-a',
        hash: 'h2',
        partitions: 1,
      },
    ]);
    expect(await index.documents('nothing-here')).toEqual([]);
  });

  it('replaces every partition of a document, shorter or longer, and removes a document and only it', async () => {
    await index.replaceDocument('replace', doc('a'), parts(0, 1, 2));
    await index.replaceDocument('replace', doc('b'), parts(3));
    await index.replaceDocument('replace', doc('a', 'h2'), parts(4));
    expect((await index.documents('replace')).find((d) => d.source === 'a')).toMatchObject({
      hash: 'h2',
      partitions: 1,
    });
    await index.replaceDocument('replace', doc('a', 'h3'), parts(0, 1, 2, 3));
    expect((await index.documents('replace')).find((d) => d.source === 'a')).toMatchObject({
      hash: 'h3',
      partitions: 4,
    });
    await index.removeDocument('replace', 'a');
    await index.removeDocument('replace', 'never-indexed');
    expect((await index.documents('replace')).map((d) => d.source)).toEqual(['b']);
  });

  it('does not list expired documents', async () => {
    await index.replaceDocument('expiry', doc('old', 'h', { expires_at: Date.now() - 1000 }), parts(0));
    await index.replaceDocument('expiry', doc('new', 'h', { expires_at: Date.now() + 60_000 }), parts(1));
    expect((await index.documents('expiry')).map((d) => d.source)).toEqual(['new']);
  });

  search('finds the most similar partitions first, with cosine similarity as the score, top N of them', async () => {
    await index.replaceDocument('search', doc('a'), parts(0, 1));
    await index.replaceDocument('search', doc('b'), [
      { text: 'near axis 0', vector: vec(0, 0.3) },
      { text: 'axis 5', vector: vec(5) },
    ]);
    const hits = await index.search('search', vec(0), 2);
    expect(hits.map((h) => [h.source, h.text])).toEqual([
      ['a', 'part 0 on axis 0'],
      ['b', 'near axis 0'],
    ]);
    expect(hits[0]?.score).toBeCloseTo(1, 5);
    expect(hits[1]?.score).toBeCloseTo(Math.sqrt(1 - 0.09), 4);
    expect(hits[0]).toMatchObject({ file_name: 'a', title: 'Title of a' });
    expect(new Set((await index.search('search', vec(0), 10)).map((h) => h.id)).size).toBe(4);
  });

  search('filters by source and file name inside the query: the top N are the top N of what matches', async () => {
    await index.replaceDocument('filter', doc('x/one.txt'), parts(0, 0, 0));
    await index.replaceDocument('filter', doc('y/two.txt'), [{ text: 'far', vector: vec(4) }]);
    // Unfiltered, the three partitions of one.txt would fill the top 3; filtered, two.txt is found.
    expect(
      (await index.search('filter', vec(0), 3, { filter: [{ field: 'file_name', value: 'two.txt' }] })).map(
        (h) => h.text,
      ),
    ).toEqual(['far']);
    expect(
      (await index.search('filter', vec(0), 3, { filter: [{ field: 'source', value: 'y/two.txt' }] })).map(
        (h) => h.source,
      ),
    ).toEqual(['y/two.txt']);
    expect(
      await index.search('filter', vec(0), 3, {
        filter: [
          { field: 'source', value: 'x/one.txt' },
          { field: 'file_name', value: 'two.txt' },
        ],
      }),
    ).toEqual([]);
    expect(
      await index.search('filter', vec(0), 3, {
        filter: [
          { field: 'source', value: 'x/one.txt' },
          { field: 'source', value: 'y/two.txt' },
        ],
      }),
    ).toEqual([]);
  });

  search('never returns expired partitions, removed documents or other indexes', async () => {
    await index.replaceDocument('gone', doc('expired', 'h', { expires_at: Date.now() - 1 }), parts(0));
    await index.replaceDocument('gone', doc('removed'), parts(0));
    await index.removeDocument('gone', 'removed');
    await index.replaceDocument('gone-other', doc('elsewhere'), parts(0));
    await index.replaceDocument('gone', doc('kept'), parts(1));
    expect((await index.search('gone', vec(0), 5)).map((h) => h.source)).toEqual(['kept']);
  });

  it('removes the semantic cache entries of the named origins, and nothing else', async () => {
    await index.replaceDocument(
      'semantic-cache:one',
      doc('e1', 'h', { origin: 'agent-a', expires_at: Date.now() + 60_000 }),
      parts(0),
    );
    await index.replaceDocument(
      'semantic-cache:two',
      doc('e2', 'h', { origin: 'agent-b', expires_at: Date.now() + 60_000 }),
      parts(0),
    );
    await index.replaceDocument(
      'semantic-cache:two',
      doc('e3', 'h', { origin: 'agent-a', expires_at: Date.now() + 60_000 }),
      parts(1),
    );
    await index.replaceDocument('cached-lookalike', doc('k', 'h', { origin: 'agent-a' }), parts(0));
    expect(await index.removeCached(['agent-a', 'agent-z'])).toBe(2);
    expect(await index.documents('semantic-cache:one')).toEqual([]);
    expect((await index.documents('semantic-cache:two')).map((d) => d.source)).toEqual(['e2']);
    expect((await index.documents('cached-lookalike')).map((d) => d.source)).toEqual(['k']);
    expect(await index.removeCached([])).toBe(0);
  });

  search(
    'finds an exact token in hybrid mode that similarity alone ranks last, within the filters and the readers',
    async () => {
      await index.replaceDocument('hybrid', doc('near-1'), [
        { text: 'How to reset the device to factory settings', vector: vec(0) },
      ]);
      await index.replaceDocument('hybrid', doc('near-2'), [
        { text: 'Resetting network settings on the device', vector: vec(0, 0.2) },
      ]);
      await index.replaceDocument('hybrid', doc('codes'), [
        { text: 'Error ERR-4711 means the fan stalled: replace part ZX-9000.', vector: vec(5) },
      ]);
      await index.replaceDocument('hybrid', doc('secret-codes', 'h', { allowed_groups: ['g-ops'] }), [
        { text: 'ERR-4711 on rack 12 is known to the operators.', vector: vec(6) },
      ]);
      const text = 'what does ERR-4711 mean?';
      expect((await index.search('hybrid', vec(0), 2, { text })).map((h) => h.source)).toEqual(['near-1', 'near-2']);
      const hybrid = await index.search('hybrid', vec(0), 2, { text, mode: 'hybrid' });
      expect(hybrid.map((h) => h.source)).toEqual(['codes', 'near-1']);
      // Scores stay similarities: the exact match's is low, as its embedding is far.
      expect(hybrid[0]?.score).toBeLessThan(0.5);
      expect(
        (await index.search('hybrid', vec(0), 3, { text, mode: 'hybrid', readers: ['g-ops'] })).map((h) => h.source),
      ).toContain('secret-codes');
      expect(
        (
          await index.search('hybrid', vec(0), 4, {
            text,
            mode: 'hybrid',
            filter: [{ field: 'source', value: 'near-2' }],
          })
        ).map((h) => h.source),
      ).toEqual(['near-2']);
      // Words that match nothing, or no words: the vector ranking alone.
      expect(
        (await index.search('hybrid', vec(0), 2, { text: 'zzzz ???', mode: 'hybrid' })).map((h) => h.source),
      ).toEqual(['near-1', 'near-2']);
      // A removed document's text is gone too.
      await index.removeDocument('hybrid', 'codes');
      expect((await index.search('hybrid', vec(0), 2, { text, mode: 'hybrid' })).map((h) => h.source)).toEqual([
        'near-1',
        'near-2',
      ]);
    },
  );

  it("lists the groups a document is for, lower-cased and sorted, and none for everyone's", async () => {
    await index.replaceDocument('groups-listed', doc('team', 'h', { allowed_groups: ['G-B', 'g-a', 'g-a'] }), parts(0));
    await index.replaceDocument('groups-listed', doc('open', 'h', { allowed_groups: [] }), parts(1));
    const listed = Object.fromEntries(
      (await index.documents('groups-listed')).map((d) => [d.source, d.allowed_groups]),
    );
    expect(listed).toEqual({ team: ['g-a', 'g-b'], open: undefined });
  });

  search(
    "finds a group's partitions only for readers in the group, inside the query: the top N are the top N they may read",
    async () => {
      // The team's and the board's partitions are nearest; the public one is farther.
      await index.replaceDocument('trimmed', doc('team.txt', 'h', { allowed_groups: ['G-TEAM'] }), parts(0, 0, 0));
      await index.replaceDocument('trimmed', doc('board.txt', 'h', { allowed_groups: ['g-board', 'g-audit'] }), [
        { text: 'board', vector: vec(0, 0.1) },
      ]);
      await index.replaceDocument('trimmed', doc('public.txt'), [{ text: 'public', vector: vec(0, 0.5) }]);
      const sources = async (readers?: readonly string[] | 'everything') => [
        ...new Set((await index.search('trimmed', vec(0), 3, readers ? { readers } : {})).map((h) => h.source)),
      ];
      expect(await sources()).toEqual(['public.txt']);
      expect(await sources(['g-other'])).toEqual(['public.txt']);
      expect(await sources(['g-team'])).toEqual(['team.txt']);
      expect(await sources(['G-AUDIT'])).toEqual(['board.txt', 'public.txt']);
      expect(await sources(['g-team', 'g-board'])).toEqual(['team.txt']);
      expect(
        (await index.search('trimmed', vec(0), 5, { readers: ['g-team', 'g-board'] })).map((h) => h.source),
      ).toEqual(['team.txt', 'team.txt', 'team.txt', 'board.txt', 'public.txt']);
      expect((await index.search('trimmed', vec(0), 5, { readers: 'everything' })).length).toBe(5);
      // A document's groups change with it.
      await index.replaceDocument('trimmed', doc('team.txt', 'h2'), parts(0));
      expect(await sources()).toEqual(['team.txt', 'public.txt']);
    },
  );
});
