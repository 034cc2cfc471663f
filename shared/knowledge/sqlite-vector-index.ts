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
import { createHash } from 'node:crypto';
import type Database from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import { openSqliteFile } from '../store/sqlite-file.js';
import { cosines } from './kernels.js';
import { Sketch, signCode, type Admission } from './sketch.js';
import { CACHE_INDEX_PREFIX, clauseValues, groupsOf, readerGroups, RRF_K, searchTerms, sourceKey, type IndexedDocument, type Partition, type SearchHit, type SearchOptions, type StoredEntry, type VectorIndex } from './vector-index.js';

/** Stands for "never expires" in the integer expiry column. */
const NEVER = Number.MAX_SAFE_INTEGER;
const MAX_DIMENSIONS = 8192;
/** Candidates the sign codes hand to exact re-scoring: at least this many, and `rescoringDepth` per result. */
const MIN_CANDIDATES = 100;
export const DEFAULT_RESCORING_DEPTH = 15;
/** The access key of a group set: `*` for everyone. */
const EVERYONE = '*';
const accessKey = (groups: readonly string[]) => (groups.length === 0 ? EVERYONE : `g:${createHash('sha256').update(groups.join(',')).digest('base64url').slice(0, 22)}`);

const vectorBlob = (v: ArrayLike<number>) => {
  const f = Float32Array.from(v);
  return Buffer.from(f.buffer, f.byteOffset, f.byteLength);
};
const floatsOf = (b: Buffer) => new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
const codeBlob = (code: Uint32Array) => Buffer.from(code.buffer, code.byteOffset, code.byteLength);
/** A stored code, copied: its buffer is not aligned for a Uint32Array view. */
const codeOf = (b: Buffer) => {
  const code = new Uint32Array(b.byteLength / 4);
  Buffer.from(code.buffer).set(b);
  return code;
};

export interface SqliteIndexOptions {
  /** Candidates per result the sign codes hand to exact re-scoring (KNOWLEDGE_RESCORING_DEPTH): more is slower and closer to exact. */
  rescoringDepth?: number;
}

interface Row {
  rowid: number;
  source: string;
  file_name: string;
  part: number;
  title: string;
  text: string;
}
interface Scored {
  rowid: number;
  score: number;
}

export function openSqliteVectorIndex(file: string, options: SqliteIndexOptions = {}): VectorIndex {
  const depth = options.rescoringDepth ?? DEFAULT_RESCORING_DEPTH;
  // Pages of 16 KiB hold a partition's vector (6 KiB at 1,536 dimensions) without an overflow chain:
  // re-scoring reads a candidate in half the time.
  const db = openSqliteFile(file, { mapped: true, pageSize: 16384 });
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
  // Documents indexed before access trimming are for everyone: their groups column is added empty.
  const documentColumns = db.prepare(`SELECT name FROM pragma_table_info('documents')`).all() as { name: string }[];
  if (!documentColumns.some((c) => c.name === 'allowed_groups')) db.exec(`ALTER TABLE documents ADD COLUMN allowed_groups TEXT NOT NULL DEFAULT ''`);

  // Statements by their text: table names and filters make a few dozen distinct ones at most.
  const prepared = new Map<string, Database.Statement>();
  const statement = (sql: string) => {
    let s = prepared.get(sql);
    if (!s) prepared.set(sql, (s = db.prepare(sql)));
    return s;
  };

  const tables = new Set<number>();
  const vectorTable = (dimensions: number, create: boolean): string | undefined => {
    const name = `vectors_${dimensions}`;
    if (tables.has(dimensions)) return name;
    const exists = db.prepare(`SELECT 1 FROM sqlite_master WHERE name = ?`).get(name) !== undefined;
    if (!exists && !create) return undefined;
    // The code sits before the text and the vector, and the sketch's covering index holds it: loading the
    // codes of an index reads neither.
    db.exec(`CREATE TABLE IF NOT EXISTS ${name} (
        rowid INTEGER PRIMARY KEY, index_name TEXT NOT NULL, source TEXT NOT NULL, file_name TEXT NOT NULL, expires_at INTEGER NOT NULL,
        access TEXT NOT NULL, part INTEGER NOT NULL, code BLOB NOT NULL, title TEXT NOT NULL, text TEXT NOT NULL, embedding BLOB NOT NULL);
      CREATE INDEX IF NOT EXISTS ${name}_by_source ON ${name} (index_name, source);
      CREATE INDEX IF NOT EXISTS ${name}_by_file ON ${name} (index_name, file_name);
      CREATE INDEX IF NOT EXISTS ${name}_codes ON ${name} (index_name, rowid, access, expires_at, code);`);
    tables.add(dimensions);
    return name;
  };

  const hadFulltext = db.prepare(`SELECT 1 FROM sqlite_master WHERE name = 'fulltext'`).get() !== undefined;
  db.exec(`CREATE VIRTUAL TABLE IF NOT EXISTS fulltext USING fts5(
    text, index_name UNINDEXED, source UNINDEXED, file_name UNINDEXED, access UNINDEXED, expires_at UNINDEXED, dimensions UNINDEXED,
    tokenize = 'unicode61 remove_diacritics 2')`);
  upgradeVec0Tables(db, (dimensions) => vectorTable(dimensions, true) as string);
  // Full text beside the vectors; filled from the partitions already indexed when it is new.
  if (!hadFulltext) {
    const existing = db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB 'vectors_[0-9]*'`).all() as { name: string }[];
    for (const { name } of existing) {
      db.exec(`INSERT INTO fulltext (rowid, text, index_name, source, file_name, access, expires_at, dimensions)
        SELECT rowid, text, index_name, source, file_name, access, expires_at, ${Number(name.slice('vectors_'.length))} FROM ${name}`);
    }
  }

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

  // The sketches of the indexes searched so far, by vector length and index name. Changes made in a
  // transaction reach them once it commits; another connection's commit drops them all.
  const sketches = new Map<string, Sketch>();
  const sketchKey = (dimensions: number, index: string) => `${dimensions}:${index}`;
  let pending: ((sketch: (dimensions: number, index: string) => Sketch | undefined) => void)[] = [];
  let dataVersion = db.pragma('data_version', { simple: true }) as number;
  const inTransaction = <A extends unknown[], R>(work: (...args: A) => R) => {
    const run = db.transaction(work);
    return (...args: A): R => {
      pending = [];
      try {
        const result = run(...args);
        for (const change of pending) change((dimensions, index) => sketches.get(sketchKey(dimensions, index)));
        return result;
      } finally {
        pending = [];
      }
    };
  };

  const remove = (index: string, source: string) => {
    for (const p of partitionsOf.all(index, source)) {
      const table = vectorTable(p.dimensions, false);
      if (table) statement(`DELETE FROM ${table} WHERE rowid = ?`).run(BigInt(p.rowid));
      deleteText.run(BigInt(p.rowid));
      pending.push((sketch) => sketch(p.dimensions, index)?.remove(p.rowid));
    }
    deletePartitions.run(index, source);
    deleteDocument.run(index, source);
  };

  const replace = inTransaction((index: string, doc: IndexedDocument, partitions: readonly Partition[]) => {
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
      const rowid = Number(insertPartition.run(index, doc.source, dimensions).lastInsertRowid);
      const code = signCode(p.vector);
      statement(
        `INSERT INTO ${table} (rowid, index_name, source, file_name, expires_at, access, part, code, title, text, embedding) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(BigInt(rowid), index, doc.source, doc.file_name, BigInt(expires), access, BigInt(i), codeBlob(code), doc.title, p.text, vectorBlob(p.vector));
      // Cache entries are found by their vector alone: their text is not searched.
      if (!index.startsWith(CACHE_INDEX_PREFIX)) insertText.run(BigInt(rowid), p.text, index, doc.source, doc.file_name, access, BigInt(expires), dimensions);
      pending.push((sketch) => sketch(dimensions, index)?.add(rowid, code, access, expires));
    });
    upsertDocument.run(index, doc.source, doc.file_name, doc.title, doc.origin, doc.hash, partitions.length, expires, groups.join(','));
  });
  const removeOne = inTransaction(remove);
  const removeCachedOf = inTransaction((origins: readonly string[]) => {
    const end = `${CACHE_INDEX_PREFIX.slice(0, -1)}${String.fromCharCode(CACHE_INDEX_PREFIX.charCodeAt(CACHE_INDEX_PREFIX.length - 1) + 1)}`;
    const found = cachedOf.all(CACHE_INDEX_PREFIX, end, JSON.stringify(origins));
    for (const e of found) remove(e.index_name, e.source);
    return found.length;
  });

  return {
    kind: 'embedded',
    replaceDocument(index, doc, partitions) {
      return Promise.resolve().then(() => replace(index, doc, partitions));
    },
    removeDocument(index, source) {
      return Promise.resolve().then(() => removeOne(index, source));
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
      return Promise.resolve().then(() => removeCachedOf(origins));
    },
    search(index, vector, top, searchOptions) {
      return Promise.resolve().then(() => search(index, vector, top, searchOptions ?? {}));
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

  /** The index's sketch for vectors of this length, loaded on first use. */
  function sketchOf(table: string, dimensions: number, index: string): Sketch {
    const version = db.pragma('data_version', { simple: true }) as number;
    if (version !== dataVersion) {
      sketches.clear();
      dataVersion = version;
    }
    const key = sketchKey(dimensions, index);
    let sketch = sketches.get(key);
    if (!sketch) {
      sketch = new Sketch(dimensions);
      const rows = statement(`SELECT rowid, access, expires_at, code FROM ${table} WHERE index_name = ?`).raw().iterate(index) as IterableIterator<[number, string, number, Buffer]>;
      for (const [rowid, access, expiresAt, code] of rows) sketch.add(rowid, codeOf(code), access, expiresAt);
      sketches.set(key, sketch);
    }
    return sketch;
  }

  /** Full rows of these partitions, in the order given. */
  function rowsOf(table: string, rowids: readonly number[]): Row[] {
    const rows = statement(`SELECT rowid, source, file_name, part, title, text FROM ${table} WHERE rowid IN (SELECT value FROM json_each(?))`).all(JSON.stringify(rowids)) as Row[];
    const byId = new Map(rows.map((r) => [r.rowid, r]));
    return rowids.map((id) => byId.get(id)).filter((r): r is Row => r !== undefined);
  }

  /** The partitions ranked by the cosine of their full vectors to the query, best first. */
  function rescore(table: string, vector: readonly number[], rowids: readonly number[]): Scored[] {
    const read = statement(`SELECT embedding FROM ${table} WHERE rowid = ?`).pluck();
    const found: number[] = [];
    const embeddings: Buffer[] = [];
    for (const rowid of [...rowids].sort((a, b) => a - b)) {
      const embedding = read.get(rowid) as Buffer | undefined;
      if (embedding === undefined) continue;
      found.push(rowid);
      embeddings.push(embedding);
    }
    const scores = cosines(vector, embeddings);
    return found.map((rowid, i) => ({ rowid, score: scores[i] as number })).sort((a, b) => b.score - a.score);
  }

  function search(index: string, vector: readonly number[], top: number, options: SearchOptions): SearchHit[] {
    const values = clauseValues(options.filter);
    const table = values && vectorTable(vector.length, false);
    if (!values || !table || top <= 0) return [];
    const keys = readable(index, options);
    const terms = options.mode === 'hybrid' ? searchTerms(options.text ?? '') : [];
    const pool = terms.length > 0 ? Math.max(20, top * 2) : top;
    const byVector = nearest(table, index, vector, pool, values, keys);
    if (terms.length === 0) return hitsOf(table, byVector);
    // Hybrid: twice the results asked for from each ranking (at least 20), fused by reciprocal rank.
    const where = Object.keys(values).map((field) => ` AND ${field} = ?`).join('') + (keys ? ' AND access IN (SELECT value FROM json_each(?))' : '');
    const byText = statement(`SELECT rowid FROM fulltext WHERE fulltext MATCH ? AND index_name = ? AND expires_at > ? AND dimensions = ?${where} ORDER BY rank LIMIT ?`)
      .raw()
      .all(terms.map((t) => `"${t.replace(/"/g, '""')}"`).join(' OR '), index, BigInt(Date.now()), vector.length, ...Object.values(values), ...(keys ? [JSON.stringify(keys)] : []), pool) as [number][];
    const fused = new Map<number, number>();
    byVector.forEach((r, i) => fused.set(r.rowid, (fused.get(r.rowid) ?? 0) + 1 / (RRF_K + i + 1)));
    byText.forEach(([rowid], i) => fused.set(rowid, (fused.get(rowid) ?? 0) + 1 / (RRF_K + i + 1)));
    const chosen = [...fused].sort((a, b) => b[1] - a[1]).slice(0, top).map(([rowid]) => rowid);
    const scores = new Map(byVector.map((r) => [r.rowid, r.score]));
    const unscored = chosen.filter((id) => !scores.has(id));
    for (const r of unscored.length > 0 ? rescore(table, vector, unscored) : []) scores.set(r.rowid, r.score);
    return hitsOf(table, chosen.map((rowid) => ({ rowid, score: scores.get(rowid) ?? 0 })));
  }

  /** The partitions nearest the vector, best first with their cosine similarity. */
  function nearest(table: string, index: string, vector: readonly number[], top: number, values: Record<string, string>, keys: string[] | undefined): Scored[] {
    const now = Date.now();
    const filtered = Object.keys(values);
    if (filtered.length > 0) {
      // A source or file name: that document's partitions, ranked exactly.
      const where = filtered.map((field) => ` AND ${field} = ?`).join('') + (keys ? ' AND access IN (SELECT value FROM json_each(?))' : '');
      const rowids = (statement(`SELECT rowid FROM ${table} WHERE index_name = ? AND expires_at > ?${where}`).raw().all(index, BigInt(now), ...Object.values(values), ...(keys ? [JSON.stringify(keys)] : [])) as [number][]).map(([id]) => id);
      return rescore(table, vector, rowids).slice(0, top);
    }
    const admission: Admission = { keys: keys ? new Set(keys) : undefined, now };
    const candidates = sketchOf(table, vector.length, index).nearest(vector, Math.max(MIN_CANDIDATES, top * depth), admission);
    return rescore(table, vector, candidates).slice(0, top);
  }

  function hitsOf(table: string, scored: readonly Scored[]): SearchHit[] {
    const scores = new Map(scored.map((s) => [s.rowid, s.score]));
    return rowsOf(
      table,
      scored.map((s) => s.rowid),
    ).map((r) => ({ id: `${sourceKey(r.source)}-${r.part}`, source: r.source, file_name: r.file_name, title: r.title, text: r.text, score: scores.get(r.rowid) ?? 0 }));
  }
}

/**
 * Moves the partitions of earlier releases' sqlite-vec tables (`quantized_{n}` before access trimming,
 * `partitions_{n}` after) into the vector tables, for everyone where they had no access key, and drops them.
 * The sqlite-vec extension is loaded only to read them.
 */
function upgradeVec0Tables(db: Database.Database, tableFor: (dimensions: number) => string): void {
  const old = db.prepare(`SELECT name FROM sqlite_master WHERE (name GLOB 'quantized_[0-9]*' OR name GLOB 'partitions_[0-9]*') AND sql LIKE 'CREATE VIRTUAL TABLE%'`).all() as { name: string }[];
  if (old.length === 0) return;
  sqliteVec.load(db);
  for (const { name } of old) {
    const dimensions = Number(name.slice(name.indexOf('_') + 1));
    const hasAccess = name.startsWith('partitions_');
    db.transaction(() => {
      const into = db.prepare(
        `INSERT INTO ${tableFor(dimensions)} (rowid, index_name, source, file_name, expires_at, access, part, code, title, text, embedding) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      );
      const rows = db.prepare(`SELECT rowid, index_name, source, file_name, expires_at, ${hasAccess ? 'access' : `'${EVERYONE}'`}, part, title, text, embedding FROM ${name}`).raw().all() as [
        number,
        string,
        string,
        string,
        number,
        string,
        number,
        string,
        string,
        Buffer,
      ][];
      for (const [rowid, index, source, fileName, expires, access, part, title, text, embedding] of rows) {
        const v = floatsOf(Buffer.from(embedding));
        into.run(BigInt(rowid), index, source, fileName, BigInt(expires), access, BigInt(part), codeBlob(signCode(v)), title, text, embedding);
      }
      db.exec(`DROP TABLE ${name}`);
    })();
  }
}
