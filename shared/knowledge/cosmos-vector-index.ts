// The vector index on Cosmos DB for NoSQL vector search: one `knowledge` container partitioned by index name,
// with a vector embedding policy and a quantizedFlat vector index on /vector. Each partition is an item; each
// document has a record item with its hash, written after its partitions, so a write cut short is redone by
// the next run. Searches are one VectorDistance query with the filters in its WHERE clause. A partition of a
// document for some groups only carries them in `access_groups`, and a search admits it when one of the
// caller's groups is among them (an EXISTS over the array, inside the same query). Queries name
// their partition in the WHERE clause too: the local Cosmos-compatible server ignores the partitionKey option.
import type { ContainerRequest, OperationInput, SqlQuerySpec } from '@azure/cosmos';
import { VectorEmbeddingDataType, VectorEmbeddingDistanceFunction, VectorIndexType } from '@azure/cosmos';
import { cosmosClient, type CosmosStoreOptions } from '../store/cosmos-store.js';
import {
  CACHE_INDEX_PREFIX,
  clauseValues,
  groupsOf,
  readerGroups,
  searchTerms,
  sourceKey,
  type Clause,
  type IndexedEntry,
  type Readers,
  type SearchHit,
  type StoredEntry,
  type VectorIndex,
} from './vector-index.js';

/**
 * The vector length the container's policy fixes (text-embedding-3-small and ada-002, and text-embedding-3-large
 * shortened with `dimensions`): Cosmos DB indexes one length per vector path.
 */
export const COSMOS_VECTOR_DIMENSIONS = 1536;
const NEVER = Number.MAX_SAFE_INTEGER;
/** Operations per transactional batch: under the 100-operation and 2 MB limits with 1536-float vectors. */
const BATCH = 25;

/** The container as Cosmos DB and the infrastructure define it. */
export const KNOWLEDGE_CONTAINER = {
  id: 'knowledge',
  partitionKey: { paths: ['/pk'] },
  // Cache entries carry their own `ttl`; documents have none and are kept.
  defaultTtl: -1,
  vectorEmbeddingPolicy: {
    vectorEmbeddings: [
      {
        path: '/vector',
        dataType: VectorEmbeddingDataType.Float32,
        distanceFunction: VectorEmbeddingDistanceFunction.Cosine,
        dimensions: COSMOS_VECTOR_DIMENSIONS,
      },
    ],
  },
  indexingPolicy: {
    indexingMode: 'consistent',
    automatic: true,
    includedPaths: [{ path: '/*' }],
    // Vectors are indexed by the vector index only: a range index on 1536 numbers per item would be waste.
    excludedPaths: [{ path: '/vector/*' }, { path: '/"_etag"/?' }],
    vectorIndexes: [{ path: '/vector', type: VectorIndexType.QuantizedFlat }],
    // Hybrid search ranks the partitions' text with BM25 (FullTextScore).
    fullTextIndexes: [{ path: '/text' }],
  },
  fullTextPolicy: { defaultLanguage: 'en-US', fullTextPaths: [{ path: '/text', language: 'en-US' }] },
} as const satisfies ContainerRequest;

interface RecordItem extends StoredEntry {
  id: string;
  allowed_groups?: string[];
  pk: string;
  kind: 'document';
  ttl?: number;
}

/** One search of an index: the `top` partitions nearest the vector, filtered, that the readers may read at `now`. */
export interface VectorSearchRequest {
  index: string;
  vector: readonly number[];
  top: number;
  values: Partial<Record<Clause['field'], string>>;
  now: number;
  readers?: Readers | undefined;
  /** Full-text terms: a hybrid search when there are any. */
  terms?: readonly string[];
}

/**
 * The search as one query: the filters, the readers and the expiry inside it, best first (ORDER BY
 * VectorDistance), or with `terms` a hybrid search: ORDER BY RANK RRF of the vector distance and the BM25
 * score of the terms (FullTextScore).
 */
export function vectorSearchQuery({
  index,
  vector,
  top,
  values,
  now,
  readers = [],
  terms = [],
}: VectorSearchRequest): SqlQuerySpec {
  const access =
    readers === 'everything'
      ? ''
      : ' AND (NOT IS_DEFINED(c.access_groups) OR EXISTS(SELECT VALUE g FROM g IN c.access_groups WHERE ' +
        'ARRAY_CONTAINS(@readers, g)))';
  const filters =
    Object.keys(values)
      .map((field) => ` AND c.${field} = @${field}`)
      .join('') + access;
  return {
    query:
      `SELECT TOP ${Math.trunc(top)} c.key, c.part, c.source, c.file_name, c.title, c.text, ` +
      `VectorDistance(c.vector, @vector) AS score ` +
      `FROM c WHERE c.pk = @index AND c.kind = 'partition' AND c.expires_at > @now${filters} ` +
      (terms.length > 0
        ? 'ORDER BY RANK RRF(VectorDistance(c.vector, @vector), ' +
          `FullTextScore(c.text, ${terms.map((_, i) => `@term${i}`).join(', ')}))`
        : 'ORDER BY VectorDistance(c.vector, @vector)'),
    parameters: [
      { name: '@index', value: index },
      { name: '@vector', value: [...vector] },
      { name: '@now', value: now },
      ...Object.entries(values).map(([field, value]) => ({ name: `@${field}`, value })),
      ...(readers === 'everything' ? [] : [{ name: '@readers', value: readerGroups(readers) }]),
      ...terms.map((value, i) => ({ name: `@term${i}`, value })),
    ],
  };
}

export async function openCosmosVectorIndex(options: CosmosStoreOptions): Promise<VectorIndex> {
  const client = cosmosClient(options);
  const database = client.database(options.database);
  if (options.createContainers) {
    await client.databases.createIfNotExists({ id: options.database });
    await database.containers.createIfNotExists(KNOWLEDGE_CONTAINER);
  }
  const container = database.container(KNOWLEDGE_CONTAINER.id);

  const batches = async (index: string, operations: OperationInput[]) => {
    for (let i = 0; i < operations.length; i += BATCH) {
      // Each operation names its partition too: the local Cosmos-compatible server reads it from there.
      const response = await container.items.batch(
        operations.slice(i, i + BATCH).map((o) => ({ ...o, partitionKey: index })),
        index,
      );
      const failed = response.result?.find((r) => r.statusCode >= 400 && r.statusCode !== 404);
      if (failed) throw new Error(`Cosmos DB refused a knowledge write (status ${failed.statusCode})`);
    }
  };
  const partitionIds = async (index: string, key: string, from: number) => {
    const { resources } = await container.items
      .query<{ id: string }>(
        {
          query: `SELECT c.id FROM c WHERE c.pk = @index AND c.kind = 'partition' AND c.key = @key AND c.part >= @from`,
          parameters: [
            { name: '@index', value: index },
            { name: '@key', value: key },
            { name: '@from', value: from },
          ],
        },
        { partitionKey: index },
      )
      .fetchAll();
    return resources.map((r) => r.id);
  };
  const deleteAll = (index: string, ids: readonly string[]) =>
    batches(
      index,
      ids.map((id) => ({ operationType: 'Delete' as const, id })),
    );
  const removeDocument = async (index: string, source: string) => {
    const key = sourceKey(source);
    await deleteAll(index, await partitionIds(index, key, 0));
    await deleteAll(index, [`doc-${key}`]);
  };

  return {
    kind: 'cosmos',
    async replaceDocument(index, doc, partitions) {
      const bad = partitions.find((p) => p.vector.length !== COSMOS_VECTOR_DIMENSIONS);
      if (bad)
        throw new RangeError(
          `the Cosmos DB vector index takes ${COSMOS_VECTOR_DIMENSIONS}-dimension embeddings, not ` +
            `${bad.vector.length}: set embedding_dimensions to ${COSMOS_VECTOR_DIMENSIONS}`,
        );
      const key = sourceKey(doc.source);
      const expires = doc.expires_at ?? NEVER;
      const ttl: { ttl?: number } =
        doc.expires_at !== undefined ? { ttl: Math.max(1, Math.ceil((doc.expires_at - Date.now()) / 1000)) } : {};
      const groups = groupsOf(doc);
      const access: { access_groups?: string[] } = groups.length > 0 ? { access_groups: groups } : {};
      const common = {
        pk: index,
        key,
        source: doc.source,
        file_name: doc.file_name,
        title: doc.title,
        expires_at: expires,
        ...access,
        ...ttl,
      };
      await batches(
        index,
        partitions.map((p, part) => ({
          operationType: 'Upsert' as const,
          resourceBody: {
            id: `${key}-${part}`,
            kind: 'partition',
            part,
            text: p.text,
            vector: [...p.vector],
            ...common,
          },
        })),
      );
      // Partitions beyond the new count: left by the document's previous, longer version (or a cut-short write).
      await deleteAll(index, await partitionIds(index, key, partitions.length));
      const record: RecordItem = {
        id: `doc-${key}`,
        pk: index,
        kind: 'document',
        source: doc.source,
        file_name: doc.file_name,
        title: doc.title,
        origin: doc.origin,
        hash: doc.hash,
        partitions: partitions.length,
        expires_at: expires,
        ...(groups.length > 0 ? { allowed_groups: groups } : {}),
        ...ttl,
      };
      await container.items.upsert(record);
    },
    removeDocument,
    async documents(index) {
      const { resources } = await container.items
        .query<RecordItem>(
          {
            query: `SELECT * FROM c WHERE c.pk = @index AND c.kind = 'document' AND c.expires_at > @now`,
            parameters: [
              { name: '@index', value: index },
              { name: '@now', value: Date.now() },
            ],
          },
          { partitionKey: index },
        )
        .fetchAll();
      return resources.map((r): IndexedEntry => ({
        source: r.source,
        file_name: r.file_name,
        title: r.title,
        origin: r.origin,
        hash: r.hash,
        partitions: r.partitions,
        ...(r.expires_at < NEVER ? { expires_at: r.expires_at } : {}),
        ...(r.allowed_groups?.length ? { allowed_groups: r.allowed_groups } : {}),
      }));
    },
    async removeCached(origins) {
      if (origins.length === 0) return 0;
      // Across partitions: each cache entry is an index (a partition) of its own.
      const { resources } = await container.items
        .query<{ pk: string; source: string }>({
          query:
            `SELECT c.pk, c.source FROM c WHERE c.kind = 'document' AND STARTSWITH(c.pk, @prefix) AND ` +
            `ARRAY_CONTAINS(@origins, c.origin)`,
          parameters: [
            { name: '@prefix', value: CACHE_INDEX_PREFIX },
            { name: '@origins', value: [...origins] },
          ],
        })
        .fetchAll();
      for (const r of resources) await removeDocument(r.pk, r.source);
      return resources.length;
    },
    async search(index, vector, top, options = {}) {
      const values = clauseValues(options.filter);
      if (!values || vector.length !== COSMOS_VECTOR_DIMENSIONS) return [];
      const { resources } = await container.items
        .query<{
          key: string;
          part: number;
          source: string;
          file_name: string;
          title: string;
          text: string;
          score: number;
        }>(
          vectorSearchQuery({
            index,
            vector,
            top,
            values,
            now: Date.now(),
            readers: options.readers,
            terms: options.mode === 'hybrid' ? searchTerms(options.text ?? '') : [],
          }),
          {
            partitionKey: index,
          },
        )
        .fetchAll();
      return resources.map((r): SearchHit => ({
        id: `${r.key}-${r.part}`,
        source: r.source,
        file_name: r.file_name,
        title: r.title,
        text: r.text,
        score: r.score,
      }));
    },
    close() {
      client.dispose();
      return Promise.resolve();
    },
  };
}
