// The embedded vector index's file: its tables (documents, partitions, access sets, one table of partitions
// per vector length, full text), created when missing, and those of earlier releases brought up to date when
// the file is opened; and how vectors and sign codes are stored in it.
import type Database from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import { openSqliteFile } from '../store/sqlite-file.js';
import { signCode } from './sketch.js';
import { columnValues, tupleOf, type Column } from './sqlite-rows.js';

/** Stands for "never expires" in the integer expiry column. */
export const NEVER = Number.MAX_SAFE_INTEGER;
/** The access key of a group set: `*` for everyone. */
export const EVERYONE = '*';

export const vectorBlob = (v: ArrayLike<number>) => {
  const f = Float32Array.from(v);
  return Buffer.from(f.buffer, f.byteOffset, f.byteLength);
};
const floatsOf = (b: Buffer) => new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
export const codeBlob = (code: Uint32Array) => Buffer.from(code.buffer, code.byteOffset, code.byteLength);
/** A stored code, copied: its buffer is not aligned for a Uint32Array view. */
export const codeOf = (b: Buffer) => {
  const code = new Uint32Array(b.byteLength / 4);
  Buffer.from(code.buffer).set(b);
  return code;
};

/** The open file: its connection, its statements, and its tables of partitions by vector length. */
export interface VectorFile {
  db: Database.Database;
  /** A statement by its text, prepared once. */
  statement: (sql: string) => Database.Statement;
  /** The table of partitions with vectors of this length; undefined when there is none. */
  vectorTable: (dimensions: number) => string | undefined;
  /** The table of partitions with vectors of this length, created when missing. */
  ensureVectorTable: (dimensions: number) => string;
}

export function openVectorFile(file: string): VectorFile {
  // Pages of 16 KiB hold a partition's vector (6 KiB at 1,536 dimensions) without an overflow chain:
  // re-scoring reads a candidate in half the time.
  const db = openSqliteFile(file, { mapped: true, pageSize: 16384 });
  db.exec(`
    CREATE TABLE IF NOT EXISTS documents (
      index_name TEXT NOT NULL, source TEXT NOT NULL, file_name TEXT NOT NULL, title TEXT NOT NULL,
      origin TEXT NOT NULL, hash TEXT NOT NULL, partitions INTEGER NOT NULL, expires_at INTEGER NOT NULL,
      PRIMARY KEY (index_name, source)) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS partitions (
      rowid INTEGER PRIMARY KEY, index_name TEXT NOT NULL, source TEXT NOT NULL, dimensions INTEGER NOT NULL);
    CREATE INDEX IF NOT EXISTS partitions_by_document ON partitions (index_name, source);
    CREATE INDEX IF NOT EXISTS documents_by_expiry ON documents (expires_at);
    CREATE TABLE IF NOT EXISTS access_sets (
      index_name TEXT NOT NULL, group_id TEXT NOT NULL, access_key TEXT NOT NULL,
      PRIMARY KEY (index_name, group_id, access_key)) WITHOUT ROWID;
  `);
  // Documents indexed before access trimming are for everyone: their groups column is added empty.
  const documentColumns = columnValues(
    'text',
    db.prepare(`SELECT name FROM pragma_table_info('documents')`).pluck().all(),
  );
  if (!documentColumns.includes('allowed_groups'))
    db.exec(`ALTER TABLE documents ADD COLUMN allowed_groups TEXT NOT NULL DEFAULT ''`);

  // Statements by their text: table names and filters make a few dozen distinct ones at most.
  const prepared = new Map<string, Database.Statement>();
  const statement = (sql: string) => {
    let s = prepared.get(sql);
    if (!s) prepared.set(sql, (s = db.prepare(sql)));
    return s;
  };

  const tables = new Set<number>();
  const ensureVectorTable = (dimensions: number): string => {
    const name = `vectors_${dimensions}`;
    if (tables.has(dimensions)) return name;
    // The code sits before the text and the vector, and the sketch's covering index holds it: loading the
    // codes of an index reads neither.
    db.exec(`CREATE TABLE IF NOT EXISTS ${name} (
        rowid INTEGER PRIMARY KEY, index_name TEXT NOT NULL, source TEXT NOT NULL, file_name TEXT NOT NULL,
        expires_at INTEGER NOT NULL, access TEXT NOT NULL, part INTEGER NOT NULL, code BLOB NOT NULL,
        title TEXT NOT NULL, text TEXT NOT NULL, embedding BLOB NOT NULL);
      CREATE INDEX IF NOT EXISTS ${name}_by_source ON ${name} (index_name, source);
      CREATE INDEX IF NOT EXISTS ${name}_by_file ON ${name} (index_name, file_name);
      CREATE INDEX IF NOT EXISTS ${name}_codes ON ${name} (index_name, rowid, access, expires_at, code);`);
    tables.add(dimensions);
    return name;
  };
  const vectorTable = (dimensions: number): string | undefined => {
    if (tables.has(dimensions)) return `vectors_${dimensions}`;
    const exists = db.prepare(`SELECT 1 FROM sqlite_master WHERE name = ?`).get(`vectors_${dimensions}`) !== undefined;
    return exists ? ensureVectorTable(dimensions) : undefined;
  };

  const hadFulltext = db.prepare(`SELECT 1 FROM sqlite_master WHERE name = 'fulltext'`).get() !== undefined;
  db.exec(`CREATE VIRTUAL TABLE IF NOT EXISTS fulltext USING fts5(
    text, index_name UNINDEXED, source UNINDEXED, file_name UNINDEXED, access UNINDEXED, expires_at UNINDEXED,
    dimensions UNINDEXED, tokenize = 'unicode61 remove_diacritics 2')`);
  upgradeVec0Tables(db, ensureVectorTable);
  // Full text beside the vectors; filled from the partitions already indexed when it is new.
  if (!hadFulltext) {
    const existing = columnValues(
      'text',
      db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB 'vectors_[0-9]*'`).pluck().all(),
    );
    for (const name of existing) {
      const dimensions = Number(name.slice('vectors_'.length));
      db.exec(`INSERT INTO fulltext (rowid, text, index_name, source, file_name, access, expires_at, dimensions)
        SELECT rowid, text, index_name, source, file_name, access, expires_at, ${dimensions} FROM ${name}`);
    }
  }
  return { db, statement, vectorTable, ensureVectorTable };
}

/** A partition as earlier releases' sqlite-vec tables hold it. */
const OLD_ROW = [
  'integer',
  'text',
  'text',
  'text',
  'integer',
  'text',
  'integer',
  'text',
  'text',
  'blob',
] as const satisfies readonly Column[];

/**
 * Moves the partitions of earlier releases' sqlite-vec tables (`quantized_{n}` before access trimming,
 * `partitions_{n}` after) into the vector tables, for everyone where they had no access key, and drops them.
 * The sqlite-vec extension is loaded only to read them.
 */
function upgradeVec0Tables(db: Database.Database, tableFor: (dimensions: number) => string): void {
  const old = columnValues(
    'text',
    db
      .prepare(
        `SELECT name FROM sqlite_master WHERE (name GLOB 'quantized_[0-9]*' OR name GLOB 'partitions_[0-9]*') ` +
          `AND sql LIKE 'CREATE VIRTUAL TABLE%'`,
      )
      .pluck()
      .all(),
  );
  if (old.length === 0) return;
  sqliteVec.load(db);
  for (const name of old) {
    const dimensions = Number(name.slice(name.indexOf('_') + 1));
    const hasAccess = name.startsWith('partitions_');
    db.transaction(() => {
      const into = db.prepare(
        `INSERT INTO ${tableFor(dimensions)} (rowid, index_name, source, file_name, expires_at, access, part, ` +
          `code, title, text, embedding) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      );
      const accessColumn = hasAccess ? 'access' : `'${EVERYONE}'`;
      const rows = db
        .prepare(
          `SELECT rowid, index_name, source, file_name, expires_at, ${accessColumn}, part, title, text, embedding ` +
            `FROM ${name}`,
        )
        .raw()
        .all()
        .map((row) => tupleOf(OLD_ROW, row));
      for (const [rowid, index, source, fileName, expires, access, part, title, text, embedding] of rows) {
        const v = floatsOf(Buffer.from(embedding));
        into.run(
          BigInt(rowid),
          index,
          source,
          fileName,
          BigInt(expires),
          access,
          BigInt(part),
          codeBlob(signCode(v)),
          title,
          text,
          embedding,
        );
      }
      db.exec(`DROP TABLE ${name}`);
    })();
  }
}
