// Embedded vector indexes written by earlier releases (sqlite-vec tables) open with this one: their partitions
// move to the vector tables, keeping who may read them (for everyone before access trimming), and are found as before.
import path from 'node:path';
import * as sqliteVec from 'sqlite-vec';
import { describe, expect, it } from 'vitest';
import { openSqliteVectorIndex } from '../../../shared/knowledge/sqlite-vector-index.js';
import { openSqliteFile } from '../../../shared/store/sqlite-file.js';
import { tempDir } from '../../support/services.js';

const blob = (v: number[]) => Buffer.from(Float32Array.from(v).buffer);

describe('an embedded vector index of the previous release', () => {
  it('keeps its documents and finds its partitions, for everyone', async () => {
    const file = path.join(tempDir(), 'knowledge.db');
    // The previous release's schema, as it wrote it.
    const old = openSqliteFile(file, { mapped: true });
    sqliteVec.load(old);
    old.exec(`
      CREATE TABLE documents (index_name TEXT NOT NULL, source TEXT NOT NULL, file_name TEXT NOT NULL,
        title TEXT NOT NULL, origin TEXT NOT NULL, hash TEXT NOT NULL, partitions INTEGER NOT NULL,
        expires_at INTEGER NOT NULL, PRIMARY KEY (index_name, source)) WITHOUT ROWID;
      CREATE TABLE partitions (rowid INTEGER PRIMARY KEY, index_name TEXT NOT NULL, source TEXT NOT NULL,
        dimensions INTEGER NOT NULL);
      CREATE VIRTUAL TABLE quantized_8 USING vec0(bits bit[8], index_name text partition key, source text,
        file_name text, expires_at integer, +part integer, +title text, +text text, +embedding blob);
    `);
    const never = BigInt(Number.MAX_SAFE_INTEGER);
    for (const [i, axis] of [0, 3].entries()) {
      const v = new Array<number>(8).fill(0);
      v[axis] = 1;
      const rowid = BigInt(
        old.prepare(`INSERT INTO partitions (index_name, source, dimensions) VALUES ('docs', 'a.txt', 8)`).run()
          .lastInsertRowid,
      );
      old
        .prepare(
          `INSERT INTO quantized_8 (rowid, bits, index_name, source, file_name, expires_at, part, title, ` +
            `text, embedding) VALUES (?, vec_quantize_binary(?), 'docs', 'a.txt', 'a.txt', ?, ?, 'A', ?, ?)`,
        )
        .run(rowid, blob(v), never, BigInt(i), `part on axis ${axis}`, blob(v));
    }
    old.prepare(`INSERT INTO documents VALUES ('docs', 'a.txt', 'a.txt', 'A', 'pipeline', 'h1', 2, ?)`).run(never);
    old.close();

    const index = openSqliteVectorIndex(file);
    try {
      expect(await index.documents('docs')).toEqual([
        { source: 'a.txt', file_name: 'a.txt', title: 'A', origin: 'pipeline', hash: 'h1', partitions: 2 },
      ]);
      const query = [0, 0, 0, 1, 0, 0, 0, 0];
      const hits = await index.search('docs', query, 2);
      expect(hits.map((h) => h.text)).toEqual(['part on axis 3', 'part on axis 0']);
      expect(hits[0]?.score).toBeCloseTo(1);
      // Their text is searchable in hybrid mode.
      expect(
        (await index.search('docs', [1, 0, 0, 0, 0, 0, 0, 0], 1, { mode: 'hybrid', text: '3' })).map((h) => h.text),
      ).toEqual(['part on axis 3']);
      // New writes go beside them, and the old table is gone.
      await index.replaceDocument(
        'docs',
        { source: 'b.txt', file_name: 'b.txt', title: 'B', origin: 'pipeline', hash: 'h', allowed_groups: ['g'] },
        [{ text: 'b', vector: query }],
      );
      expect((await index.search('docs', query, 3)).map((h) => h.source)).toEqual(['a.txt', 'a.txt']);
      expect((await index.search('docs', query, 3, { readers: ['g'] })).map((h) => h.source).sort()).toEqual([
        'a.txt',
        'a.txt',
        'b.txt',
      ]);
    } finally {
      await index.close();
    }
  });

  it('keeps the access of partitions of the release with access trimming, and their text searchable', async () => {
    const file = path.join(tempDir(), 'knowledge.db');
    const old = openSqliteFile(file, { mapped: true });
    sqliteVec.load(old);
    old.exec(`
      CREATE TABLE documents (index_name TEXT NOT NULL, source TEXT NOT NULL, file_name TEXT NOT NULL,
        title TEXT NOT NULL, origin TEXT NOT NULL, hash TEXT NOT NULL, partitions INTEGER NOT NULL,
        expires_at INTEGER NOT NULL, allowed_groups TEXT NOT NULL DEFAULT '',
        PRIMARY KEY (index_name, source)) WITHOUT ROWID;
      CREATE TABLE partitions (rowid INTEGER PRIMARY KEY, index_name TEXT NOT NULL, source TEXT NOT NULL,
        dimensions INTEGER NOT NULL);
      CREATE TABLE access_sets (index_name TEXT NOT NULL, group_id TEXT NOT NULL, access_key TEXT NOT NULL,
        PRIMARY KEY (index_name, group_id, access_key)) WITHOUT ROWID;
      CREATE VIRTUAL TABLE partitions_8 USING vec0(bits bit[8], index_name text partition key, source text,
        file_name text, expires_at integer, access text, +part integer, +title text, +text text, +embedding blob);
      CREATE VIRTUAL TABLE fulltext USING fts5(text, index_name UNINDEXED, source UNINDEXED, file_name UNINDEXED,
        access UNINDEXED, expires_at UNINDEXED, dimensions UNINDEXED, tokenize = 'unicode61 remove_diacritics 2');
      INSERT INTO access_sets VALUES ('docs', 'finance', 'g:finance');
    `);
    const never = BigInt(Number.MAX_SAFE_INTEGER);
    for (const [source, access, axis] of [
      ['open.txt', '*', 0],
      ['ledger.txt', 'g:finance', 1],
    ] as const) {
      const v = new Array<number>(8).fill(0);
      v[axis] = 1;
      const rowid = BigInt(
        old.prepare(`INSERT INTO partitions (index_name, source, dimensions) VALUES ('docs', ?, 8)`).run(source)
          .lastInsertRowid,
      );
      old
        .prepare(
          `INSERT INTO partitions_8 (rowid, bits, index_name, source, file_name, expires_at, access, part, ` +
            `title, text, embedding) VALUES (?, vec_quantize_binary(?), 'docs', ?, ?, ?, ?, 0, 'T', ?, ?)`,
        )
        .run(rowid, blob(v), source, source, never, access, `text of ${source}`, blob(v));
      old
        .prepare(
          `INSERT INTO fulltext (rowid, text, index_name, source, file_name, access, expires_at, dimensions) ` +
            `VALUES (?, ?, 'docs', ?, ?, ?, ?, 8)`,
        )
        .run(rowid, `text of ${source}`, source, source, access, never);
      old
        .prepare(`INSERT INTO documents VALUES ('docs', ?, ?, 'T', 'pipeline', 'h', 1, ?, ?)`)
        .run(source, source, never, access === '*' ? '' : 'finance');
    }
    old.close();

    const index = openSqliteVectorIndex(file);
    try {
      const ledger = [0, 1, 0, 0, 0, 0, 0, 0];
      expect((await index.search('docs', ledger, 2)).map((h) => h.source)).toEqual(['open.txt']);
      expect((await index.search('docs', ledger, 2, { readers: ['finance'] })).map((h) => h.source)).toEqual([
        'ledger.txt',
        'open.txt',
      ]);
      expect(
        (
          await index.search('docs', [1, 0, 0, 0, 0, 0, 0, 0], 1, {
            mode: 'hybrid',
            text: 'ledger',
            readers: ['finance'],
          })
        ).map((h) => h.source),
      ).toEqual(['ledger.txt']);
    } finally {
      await index.close();
    }
    const after = openSqliteFile(file, { mapped: false });
    expect(after.prepare(`SELECT name FROM sqlite_master WHERE name = 'partitions_8'`).all()).toEqual([]);
    after.close();
  });
});
