// Writes to the embedded vector index, each in one transaction: a document replaced (its partitions with
// their vectors, sign codes and full text, its access key, its entry) or removed, and the cache entries of
// some origins removed. Expired documents go as new ones come. Sketches already loaded learn of a
// transaction's changes once it has committed.
import { createHash } from 'node:crypto';
import { CACHE_INDEX_PREFIX, groupsOf, type IndexedDocument, type Partition } from './vector-index.js';
import { signCode, type Sketch } from './sketch.js';
import { codeBlob, EVERYONE, NEVER, vectorBlob, type VectorFile } from './sqlite-vector-file.js';
import type { SketchCache } from './sqlite-vector-sketches.js';

const MAX_DIMENSIONS = 8192;
const accessKey = (groups: readonly string[]) =>
  groups.length === 0
    ? EVERYONE
    : `g:${createHash('sha256').update(groups.join(',')).digest('base64url').slice(0, 22)}`;

export interface VectorWrites {
  /** Replaces a document's partitions and entry. */
  replace: (index: string, doc: IndexedDocument, partitions: readonly Partition[]) => void;
  remove: (index: string, source: string) => void;
  /** Removes the cache entries of these origins; answers how many there were. */
  removeCached: (origins: readonly string[]) => number;
}

export function vectorWrites(file: VectorFile, sketches: SketchCache): VectorWrites {
  const { db, statement, vectorTable, ensureVectorTable } = file;
  const insertPartition = db.prepare<[string, string, number]>(
    `INSERT INTO partitions (index_name, source, dimensions) VALUES (?, ?, ?)`,
  );
  const partitionsOf = db.prepare<[string, string], { rowid: number; dimensions: number }>(
    `SELECT rowid, dimensions FROM partitions WHERE index_name = ? AND source = ?`,
  );
  const deletePartitions = db.prepare<[string, string]>(`DELETE FROM partitions WHERE index_name = ? AND source = ?`);
  const upsertDocument = db.prepare<[string, string, string, string, string, string, number, number, string]>(
    `INSERT OR REPLACE INTO documents (index_name, source, file_name, title, origin, hash, partitions, ` +
      `expires_at, allowed_groups) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const admit = db.prepare<[string, string, string]>(
    `INSERT OR IGNORE INTO access_sets (index_name, group_id, access_key) VALUES (?, ?, ?)`,
  );
  const deleteDocument = db.prepare<[string, string]>(`DELETE FROM documents WHERE index_name = ? AND source = ?`);
  const expired = db.prepare<[number], { index_name: string; source: string }>(
    `SELECT index_name, source FROM documents WHERE expires_at <= ? LIMIT 100`,
  );
  // Index names from the prefix up to the next character after its last: a range the primary key serves.
  const cachedOf = db.prepare<[string, string, string], { index_name: string; source: string }>(
    `SELECT index_name, source FROM documents WHERE index_name >= ? AND index_name < ? AND origin IN (SELECT ` +
      `value FROM json_each(?))`,
  );
  const insertText = db.prepare(
    `INSERT INTO fulltext (rowid, text, index_name, source, file_name, access, expires_at, dimensions) VALUES ` +
      `(?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const deleteText = db.prepare<[bigint]>(`DELETE FROM fulltext WHERE rowid = ?`);

  // Changes to the loaded sketches, made once the transaction that asked for them commits.
  let pending: ((sketch: (dimensions: number, index: string) => Sketch | undefined) => void)[] = [];
  const inTransaction = <A extends unknown[], R>(work: (...args: A) => R) => {
    const run = db.transaction(work);
    return (...args: A): R => {
      pending = [];
      try {
        const result = run(...args);
        for (const change of pending) change((dimensions, index) => sketches.loaded(dimensions, index));
        return result;
      } finally {
        pending = [];
      }
    };
  };

  const remove = (index: string, source: string) => {
    for (const p of partitionsOf.all(index, source)) {
      const table = vectorTable(p.dimensions);
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
      if (dimensions === 0 || dimensions > MAX_DIMENSIONS)
        throw new RangeError(`a vector has ${dimensions} dimensions (1 to ${MAX_DIMENSIONS})`);
      const table = ensureVectorTable(dimensions);
      const rowid = Number(insertPartition.run(index, doc.source, dimensions).lastInsertRowid);
      const code = signCode(p.vector);
      statement(
        `INSERT INTO ${table} (rowid, index_name, source, file_name, expires_at, access, part, code, title, ` +
          `text, embedding) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(
        BigInt(rowid),
        index,
        doc.source,
        doc.file_name,
        BigInt(expires),
        access,
        BigInt(i),
        codeBlob(code),
        doc.title,
        p.text,
        vectorBlob(p.vector),
      );
      // Cache entries are found by their vector alone: their text is not searched.
      if (!index.startsWith(CACHE_INDEX_PREFIX))
        insertText.run(BigInt(rowid), p.text, index, doc.source, doc.file_name, access, BigInt(expires), dimensions);
      pending.push((sketch) => sketch(dimensions, index)?.add({ rowid, code, accessKey: access, expiresAt: expires }));
    });
    upsertDocument.run(
      index,
      doc.source,
      doc.file_name,
      doc.title,
      doc.origin,
      doc.hash,
      partitions.length,
      expires,
      groups.join(','),
    );
  });
  const removeCached = inTransaction((origins: readonly string[]) => {
    const last = CACHE_INDEX_PREFIX.charCodeAt(CACHE_INDEX_PREFIX.length - 1);
    const end = `${CACHE_INDEX_PREFIX.slice(0, -1)}${String.fromCharCode(last + 1)}`;
    const found = cachedOf.all(CACHE_INDEX_PREFIX, end, JSON.stringify(origins));
    for (const e of found) remove(e.index_name, e.source);
    return found.length;
  });
  return { replace, remove: inTransaction(remove), removeCached };
}
