// The embedded vector index: SQLite in its own file beside the store. One table of partitions per vector
// length (`vectors_{dimensions}`) holds each partition's text, its full vector and its sign code, with the
// index name, source, file name, expiry and access key its searches filter on. Documents and the rowids of
// their partitions are kept in plain tables; a document is replaced in one transaction.
// Access: a partition holds one access key, `*` for everyone or a digest of its document's group set; the
// `access_sets` table says which groups each key admits, so a caller's groups become the keys they may read.
// Search: the sign codes of an index are held in memory (sketch.ts, loaded from a covering index on first use
// and kept in step with this connection's writes; another connection's commit drops them), which narrow the
// partitions to `rescoringDepth` candidates per result (at least 100); those are ranked by the cosine of
// their full vectors. A search filtered by source or file name reads that document's few partitions and
// ranks them exactly. Hybrid search: an FTS5 table holds every partition's text under the partition's rowid,
// with the same filter columns; its BM25 ranking and the vector ranking are fused by reciprocal rank.
// `npm run bench -- knowledge` measures recall and latency over 100,000 partitions of 1,536 dimensions.
// Indexes written by earlier releases (sqlite-vec vec0 tables) move to these tables when the file is opened.
// This module opens the index; its file and tables are sqlite-vector-file.ts, its writes
// sqlite-vector-writes.ts, its searches sqlite-vector-search.ts, the loaded sketches sqlite-vector-sketches.ts.
import { NEVER, openVectorFile } from './sqlite-vector-file.js';
import { vectorSearch } from './sqlite-vector-search.js';
import { SketchCache } from './sqlite-vector-sketches.js';
import { vectorWrites } from './sqlite-vector-writes.js';
import type { StoredEntry, VectorIndex } from './vector-index.js';

export const DEFAULT_RESCORING_DEPTH = 15;

export interface SqliteIndexOptions {
  /**
   * Candidates per result the sign codes hand to exact re-scoring (KNOWLEDGE_RESCORING_DEPTH): more is slower and
   * closer to exact.
   */
  rescoringDepth?: number;
}

export function openSqliteVectorIndex(
  file: string,
  { rescoringDepth: depth = DEFAULT_RESCORING_DEPTH }: SqliteIndexOptions = {},
): VectorIndex {
  const opened = openVectorFile(file);
  const { db } = opened;
  const sketches = new SketchCache(opened);
  const writes = vectorWrites(opened, sketches);
  const search = vectorSearch(opened, sketches, depth);
  const documentsOf = db.prepare<[string, number], StoredEntry & { allowed_groups: string }>(
    `SELECT source, file_name, title, origin, hash, partitions, expires_at, allowed_groups FROM documents ` +
      `WHERE index_name = ? AND expires_at > ?`,
  );

  return {
    kind: 'embedded',
    replaceDocument(index, doc, partitions) {
      return Promise.resolve().then(() => writes.replace(index, doc, partitions));
    },
    removeDocument(index, source) {
      return Promise.resolve().then(() => writes.remove(index, source));
    },
    documents(index) {
      return Promise.resolve(
        documentsOf.all(index, Date.now()).map((r) => ({
          source: r.source,
          file_name: r.file_name,
          title: r.title,
          origin: r.origin,
          hash: r.hash,
          partitions: r.partitions,
          ...(r.expires_at < NEVER ? { expires_at: r.expires_at } : {}),
          ...(r.allowed_groups !== '' ? { allowed_groups: r.allowed_groups.split(',') } : {}),
        })),
      );
    },
    removeCached(origins) {
      return Promise.resolve().then(() => writes.removeCached(origins));
    },
    search(index, vector, top, options) {
      return Promise.resolve().then(() => search({ index, vector, top, options: options ?? {} }));
    },
    close() {
      db.close();
      return Promise.resolve();
    },
  };
}
