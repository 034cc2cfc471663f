// The embedded vector index: SQLite with the sqlite-vec extension, in its own file beside the store. One vec0
// table per vector length (a vec0 column has a fixed length) with the index name as its partition key and
// source, file name, expiry and access as metadata columns, so filters run inside the KNN query. Documents and
// the rowids of their partitions are kept in plain tables; a document is replaced in one transaction.
// Access: a partition holds one access key, `*` for everyone or a digest of its document's group set; the
// `access_sets` table says which groups each key admits, so a caller's groups become the keys they may read
// and the KNN filters on `access IN (...)` (documents share few distinct group sets).
// Hybrid search: an FTS5 table holds every partition's text under the partition's rowid, with the same
// filter columns; its BM25 ranking and the vector ranking are fused by reciprocal rank.
// Search is binary quantization with exact re-scoring (the sqlite-vec recipe): a KNN over one bit per
// dimension (Hamming distance, 32 times less to read than float32) picks the candidates, at least 100 and
// twenty times what was asked for, and their full vectors are ranked by cosine distance. Over 10,000 partitions of
// 1,536 dimensions that is about 2 ms instead of 20 ms for an exact scan; below the candidate count (small
// indexes, narrow filters) it is exact. `npm run bench -- knowledge` measures its recall against an exact scan.
import * as sqliteVec from 'sqlite-vec';
import { openSqliteFile } from '../store/sqlite-file.js';
import { createHash } from 'node:crypto';
import { CACHE_INDEX_PREFIX, clauseValues, groupsOf, readerGroups, RRF_K, searchTerms, sourceKey, type IndexedDocument, type Partition, type SearchHit, type SearchOptions, type StoredEntry, type VectorIndex } from './vector-index.js';

/** Stands for "never expires" in the integer expiry column. */
const NEVER = Number.MAX_SAFE_INTEGER;
const MAX_DIMENSIONS = 8192;
/** Candidates the quantized search hands to exact re-scoring: at least this many, and twenty per result. */
const MIN_CANDIDATES = 100;
const OVERSAMPLING = 20;
/** The most a vec0 KNN returns. */
const MAX_K = 4096;

const vectorBlob = (v: readonly number[]) => {
  const f = Float32Array.from(v);
  return Buffer.from(f.buffer, f.byteOffset, f.byteLength);
};
/** Bit vectors are whole bytes: a length that is not a multiple of 8 is padded with zeros (which quantize to 0). */
const bitLength = (dimensions: number) => Math.ceil(dimensions / 8) * 8;
const padded = (v: readonly number[]) => (v.length % 8 === 0 ? v : [...v, ...new Array<number>(bitLength(v.length) - v.length).fill(0)]);
/** The access key of a group set: `*` for everyone. */
const EVERYONE = '*';
const accessKey = (groups: readonly string[]) => (groups.length === 0 ? EVERYONE : `g:${createHash('sha256').update(groups.join(',')).digest('base64url').slice(0, 22)}`);


export function openSqliteVectorIndex(file: string): VectorIndex {
  const db = openSqliteFile(file, { mapped: true });
  sqliteVec.load(db);
  db.exec(`
    CREATE TABLE IF NOT EXISTS documents (
      index_name TEXT NOT NULL, source TEXT NOT NULL, file_name TEXT NOT NULL, title TEXT NOT NULL, origin TEXT NOT NULL,
      hash TEXT NOT NULL, partitions INTEGER NOT NULL, expires_at INTEGER NOT NULL, PRIMARY KEY (index_name, source)) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS partitions (
      rowid INTEGER PRIMARY KEY, index_name TEXT NOT NULL, source TEXT NOT NULL, dimensions INTEGER NOT NULL);
    CREATE INDEX IF NOT EXISTS partitions_by_document ON partitions (index_name, source);
    CREATE INDEX IF NOT EXISTS documents_by_expiry ON documents (expires_at);
    CREATE TABLE IF NOT EXISTS access_sets (
      index_name TEXT NOT NULL, group_id TEXT NOT NULL, access_key TEXT NOT NULL, PRIMARY KEY (index_name, group_id, access_key)) WITHOUT ROWID;
  `);
  // Full text beside the vectors; filled from the partitions already indexed when it is new.
  const hadFulltext = db.prepare(`SELECT 1 FROM sqlite_master WHERE name = 'fulltext'`).get() !== undefined;
  db.exec(`CREATE VIRTUAL TABLE IF NOT EXISTS fulltext USING fts5(
    text, index_name UNINDEXED, source UNINDEXED, file_name UNINDEXED, access UNINDEXED, expires_at UNINDEXED, dimensions UNINDEXED,
    tokenize = 'unicode61 remove_diacritics 2')`);
  const fillFulltext = (table: string, dimensions: number) =>
    db.exec(`INSERT INTO fulltext (rowid, text, index_name, source, file_name, access, expires_at, dimensions)
      SELECT rowid, text, index_name, source, file_name, access, expires_at, ${dimensions} FROM ${table}`);
  if (!hadFulltext) {
    const existing = db.prepare(`SELECT name FROM sqlite_master WHERE name GLOB 'partitions_[0-9]*' AND sql LIKE 'CREATE VIRTUAL TABLE%'`).all() as { name: string }[];
    for (const { name } of existing) fillFulltext(name, Number(name.slice('partitions_'.length)));
  }
  // Documents indexed before access trimming are for everyone: their groups column is added empty.
  const documentColumns = db.prepare(`SELECT name FROM pragma_table_info('documents')`).all() as { name: string }[];
  if (!documentColumns.some((c) => c.name === 'allowed_groups')) db.exec(`ALTER TABLE documents ADD COLUMN allowed_groups TEXT NOT NULL DEFAULT ''`);

  const tables = new Set<number>();
  const vectorTable = (dimensions: number, create: boolean): string | undefined => {
    const name = `partitions_${dimensions}`;
    if (tables.has(dimensions)) return name;
    const exists = db.prepare(`SELECT 1 FROM sqlite_master WHERE name = ?`).get(name) !== undefined;
    const before = `quantized_${dimensions}`;
    const older = !exists && db.prepare(`SELECT 1 FROM sqlite_master WHERE name = ?`).get(before) !== undefined;
    if (!exists && !create && !older) return undefined;
    if (!exists) {
      db.transaction(() => {
        db.exec(`CREATE VIRTUAL TABLE ${name} USING vec0(
          bits bit[${bitLength(dimensions)}],
          index_name text partition key, source text, file_name text, expires_at integer, access text,
          +part integer, +title text, +text text, +embedding blob)`);
        // A table of the release before access trimming: its partitions move over, for everyone.
        if (older) {
          db.exec(`INSERT INTO ${name} (rowid, bits, index_name, source, file_name, expires_at, access, part, title, text, embedding)
            SELECT rowid, vec_bit(bits), index_name, source, file_name, expires_at, '${EVERYONE}', part, title, text, embedding FROM ${before}`);
          db.exec(`DROP TABLE ${before}`);
          fillFulltext(name, dimensions);
        }
      })();
    }
    tables.add(dimensions);
    return name;
  };

  const insertPartition = db.prepare<[string, string, number]>(`INSERT INTO partitions (index_name, source, dimensions) VALUES (?, ?, ?)`);
  const partitionsOf = db.prepare<[string, string], { rowid: number; dimensions: number }>(`SELECT rowid, dimensions FROM partitions WHERE index_name = ? AND source = ?`);
  const deletePartitions = db.prepare<[string, string]>(`DELETE FROM partitions WHERE index_name = ? AND source = ?`);
  const upsertDocument = db.prepare<[string, string, string, string, string, string, number, number, string]>(
    `INSERT OR REPLACE INTO documents (index_name, source, file_name, title, origin, hash, partitions, expires_at, allowed_groups) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const admit = db.prepare<[string, string, string]>(`INSERT OR IGNORE INTO access_sets (index_name, group_id, access_key) VALUES (?, ?, ?)`);
  const keysOf = db.prepare<[string, string], { access_key: string }>(`SELECT DISTINCT access_key FROM access_sets WHERE index_name = ? AND group_id IN (SELECT value FROM json_each(?))`);
  const deleteDocument = db.prepare<[string, string]>(`DELETE FROM documents WHERE index_name = ? AND source = ?`);
  const documentsOf = db.prepare<[string, number], StoredEntry & { allowed_groups: string }>(
    `SELECT source, file_name, title, origin, hash, partitions, expires_at, allowed_groups FROM documents WHERE index_name = ? AND expires_at > ?`,
  );
  const expired = db.prepare<[number], { index_name: string; source: string }>(`SELECT index_name, source FROM documents WHERE expires_at <= ? LIMIT 100`);
  // Index names from the prefix up to the next character after its last: a range the primary key serves.
  const cachedOf = db.prepare<[string, string, string], { index_name: string; source: string }>(
    `SELECT index_name, source FROM documents WHERE index_name >= ? AND index_name < ? AND origin IN (SELECT value FROM json_each(?))`,
  );

  const insertText = db.prepare(`INSERT INTO fulltext (rowid, text, index_name, source, file_name, access, expires_at, dimensions) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`);
  const deleteText = db.prepare<[bigint]>(`DELETE FROM fulltext WHERE rowid = ?`);
  const remove = (index: string, source: string) => {
    for (const p of partitionsOf.all(index, source)) {
      const table = vectorTable(p.dimensions, false);
      if (table) db.prepare(`DELETE FROM ${table} WHERE rowid = ?`).run(BigInt(p.rowid));
      deleteText.run(BigInt(p.rowid));
    }
    deletePartitions.run(index, source);
    deleteDocument.run(index, source);
  };

  const replace = db.transaction((index: string, doc: IndexedDocument, partitions: readonly Partition[]) => {
    remove(index, doc.source);
    // Expired entries go as new ones come: the file does not grow with a cache nobody reads.
    for (const e of expired.all(Date.now())) remove(e.index_name, e.source);
    const expires = doc.expires_at ?? NEVER;
    const groups = groupsOf(doc);
    const access = accessKey(groups);
    for (const g of groups) admit.run(index, g, access);
    partitions.forEach((p, i) => {
      const dimensions = p.vector.length;
      if (dimensions === 0 || dimensions > MAX_DIMENSIONS) throw new RangeError(`a vector has ${dimensions} dimensions (1 to ${MAX_DIMENSIONS})`);
      const table = vectorTable(dimensions, true) as string;
      const rowid = BigInt(insertPartition.run(index, doc.source, dimensions).lastInsertRowid);
      const vector = vectorBlob(p.vector);
      db.prepare(
        `INSERT INTO ${table} (rowid, bits, index_name, source, file_name, expires_at, access, part, title, text, embedding) VALUES (?, vec_quantize_binary(?), ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(
        rowid,
        vectorBlob(padded(p.vector)),
        index,
        doc.source,
        doc.file_name,
        BigInt(expires),
        access,
        BigInt(i),
        doc.title,
        p.text,
        vector,
      );
      // Cache entries are found by their vector alone: their text is not searched.
      if (!index.startsWith(CACHE_INDEX_PREFIX)) insertText.run(rowid, p.text, index, doc.source, doc.file_name, access, BigInt(expires), dimensions);
    });
    upsertDocument.run(index, doc.source, doc.file_name, doc.title, doc.origin, doc.hash, partitions.length, expires, groups.join(','));
  });

  return {
    kind: 'embedded',
    replaceDocument(index, doc, partitions) {
      return Promise.resolve().then(() => replace(index, doc, partitions));
    },
    removeDocument(index, source) {
      return Promise.resolve().then(() => db.transaction(remove)(index, source));
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
      return Promise.resolve().then(() =>
        db.transaction(() => {
          const end = `${CACHE_INDEX_PREFIX.slice(0, -1)}${String.fromCharCode(CACHE_INDEX_PREFIX.charCodeAt(CACHE_INDEX_PREFIX.length - 1) + 1)}`;
          const found = cachedOf.all(CACHE_INDEX_PREFIX, end, JSON.stringify(origins));
          for (const e of found) remove(e.index_name, e.source);
          return found.length;
        })(),
      );
    },
    search(index, vector, top, options) {
      return Promise.resolve().then(() => search(index, vector, top, options ?? {}));
    },
    close() {
      db.close();
      return Promise.resolve();
    },
  };

  /** The access keys readers may read, or undefined for every key. */
  function readable(index: string, options: SearchOptions): string[] | undefined {
    const readers = options.readers ?? [];
    if (readers === 'everything') return undefined;
    const groups = readerGroups(readers);
    return [EVERYONE, ...(groups.length > 0 ? keysOf.all(index, JSON.stringify(groups)).map((r) => r.access_key) : [])];
  }

  interface Row {
    rowid: number;
    source: string;
    file_name: string;
    part: number;
    title: string;
    text: string;
    distance: number;
  }
  function hitOf(r: Row): SearchHit {
    return { id: `${sourceKey(r.source)}-${r.part}`, source: r.source, file_name: r.file_name, title: r.title, text: r.text, score: 1 - r.distance };
  }

  function search(index: string, vector: readonly number[], top: number, options: SearchOptions): SearchHit[] {
    const values = clauseValues(options.filter);
    const table = values && vectorTable(vector.length, false);
    if (!values || !table) return [];
    const keys = readable(index, options);
    const where = Object.keys(values).map((field) => ` AND ${field} = ?`).join('') + (keys ? ` AND access IN (${keys.map(() => '?').join(', ')})` : '');
    const params = [...Object.values(values), ...(keys ?? [])];
    const terms = options.mode === 'hybrid' ? searchTerms(options.text ?? '') : [];
    if (terms.length === 0) return nearest(table, index, vector, top, where, params).map(hitOf);
    // Hybrid: twice the results asked for from each ranking (at least 20), fused by reciprocal rank.
    const pool = Math.max(20, top * 2);
    const byVector = nearest(table, index, vector, pool, where, params);
    const byText = db
      .prepare(
        `SELECT rowid FROM fulltext WHERE fulltext MATCH ? AND index_name = ? AND expires_at > ? AND dimensions = ?${where} ORDER BY rank LIMIT ?`,
      )
      .all(terms.map((t) => `"${t.replace(/"/g, '""')}"`).join(' OR '), index, BigInt(Date.now()), vector.length, ...params, pool) as { rowid: number }[];
    const fused = new Map<number, number>();
    byVector.forEach((r, i) => fused.set(r.rowid, (fused.get(r.rowid) ?? 0) + 1 / (RRF_K + i + 1)));
    byText.forEach((r, i) => fused.set(r.rowid, (fused.get(r.rowid) ?? 0) + 1 / (RRF_K + i + 1)));
    const rows = new Map(byVector.map((r) => [r.rowid, r]));
    const query = vectorBlob(vector);
    const read = db.prepare(`SELECT rowid, source, file_name, part, title, text, vec_distance_cosine(embedding, ?) AS distance FROM ${table} WHERE rowid = ?`);
    return [...fused]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([rowid]) => rows.get(rowid) ?? (read.get(query, BigInt(rowid)) as Row | undefined))
      .filter((r): r is Row => r !== undefined)
      .map(hitOf);
  }

  /** The partitions nearest the vector: quantized candidates, ranked by exact cosine distance. */
  function nearest(table: string, index: string, vector: readonly number[], top: number, where: string, params: readonly (string | number)[]): Row[] {
    const candidates = Math.min(MAX_K, Math.max(MIN_CANDIDATES, top * OVERSAMPLING));
    return db
      .prepare(
        `WITH candidates AS (
           SELECT rowid, source, file_name, part, title, text, embedding FROM ${table}
           WHERE bits MATCH vec_quantize_binary(?) AND k = ? AND index_name = ? AND expires_at > ?${where})
         SELECT rowid, source, file_name, part, title, text, vec_distance_cosine(embedding, ?) AS distance
         FROM candidates ORDER BY distance LIMIT ?`,
      )
      .all(vectorBlob(padded(vector)), candidates, index, BigInt(Date.now()), ...params, vectorBlob(vector), top) as Row[];
  }
}
