// The embedded store's tables and indexes: an index of one document type is partial (the messages of a session
// cost the session list's indexes nothing) and queries of that type are answered from it; a file an earlier
// release wrote (tables ordered by key, every index whole) is brought to this shape on open, nothing lost.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { CONTAINERS } from '../../../../shared/store/containers.js';
import { openSqliteStore } from '../../../../shared/store/sqlite-store.js';
import type { Doc, DocumentStore } from '../../../../shared/store/types.js';
import { rawContainer } from '../../../support/raw-container.js';

interface Item extends Doc {
  type: string;
  session_id?: string;
  created_on?: string;
  updated_on?: string;
  timestamp?: string;
  sender?: string;
}

/** A file as releases before rowid tables and typed indexes wrote it: three sessions, each with a message. */
function earlierFile(file: string) {
  const db = new Database(file);
  const fields = CONTAINERS.sessions.aggregateFields ?? [];
  const json = (f: string) => `json_extract(body, '$.${f}')`;
  db.exec(
    `CREATE TABLE docs_sessions (pk TEXT NOT NULL, id TEXT NOT NULL, etag TEXT NOT NULL, expires_at INTEGER, ` +
      `body TEXT NOT NULL, PRIMARY KEY (pk, id)) WITHOUT ROWID`,
  );
  [
    ['type', 'updated_on'],
    ['type', 'session_id', 'timestamp'],
    ['type', 'created_on'],
  ].forEach((index, i) => db.exec(`CREATE INDEX ix_sessions_${i} ON docs_sessions (${index.map(json).join(', ')})`));
  const factColumns = fields.map((f) => `"f:${f}"`).join(', ');
  db.exec(
    `CREATE TABLE facts_sessions (pk TEXT NOT NULL, id TEXT NOT NULL, expires_at INTEGER, ${factColumns}, ` +
      'PRIMARY KEY (pk, id)) WITHOUT ROWID',
  );
  const insert = db.prepare(`INSERT INTO docs_sessions VALUES ('u1', ?, ?, NULL, ?)`);
  for (const doc of items()) insert.run(doc.id, `"e-${doc.id}"`, JSON.stringify(doc));
  db.exec(
    `INSERT INTO facts_sessions SELECT pk, id, expires_at, ${fields.map(json).join(', ')} FROM docs_sessions ` +
      `WHERE ${json('type')} IN ('Session', 'Message')`,
  );
  db.close();
}

const indexesOf = (file: string) => {
  const db = new Database(file, { readonly: true });
  try {
    return db
      .prepare(`SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'docs_sessions' ORDER BY name`)
      .all() as { name: string; sql: string }[];
  } finally {
    db.close();
  }
};

const items = (): Item[] =>
  [0, 1, 2].flatMap((i) => [
    {
      id: `s${i}`,
      pk: 'u1',
      type: 'Session',
      created_on: `2026-11-0${i + 1}T00:00:00.000Z`,
      updated_on: `2026-11-2${3 - i}T00:00:00.000Z`,
    },
    {
      id: `m${i}`,
      pk: 'u1',
      type: 'Message',
      session_id: `s${i}`,
      sender: 'User',
      timestamp: `2026-11-0${i + 1}T00:00:01.000Z`,
    },
  ]);

async function fill(store: DocumentStore) {
  const c = rawContainer<Item>(store, 'sessions');
  for (const item of items()) await c.create(item);
}

async function sessionsByActivity(store: DocumentStore): Promise<string[]> {
  const page = await rawContainer(store, 'sessions').query({
    partition: 'u1',
    where: [{ field: 'type', op: 'eq', value: 'Session' }],
    orderBy: [{ field: 'updated_on', direction: 'desc' }],
  });
  return page.items.map((d) => d.id);
}

describe('embedded store indexes', () => {
  let store: DocumentStore | undefined;
  afterEach(() => store?.close());
  const file = () => path.join(mkdtempSync(path.join(tmpdir(), 'sqlite-indexes-')), 'store.db');

  it('keeps the session indexes partial, and answers from them', async () => {
    const f = file();
    store = openSqliteStore(f);
    await fill(store);
    expect(await sessionsByActivity(store)).toEqual(['s0', 's1', 's2']);
    const since = await rawContainer(store, 'sessions').query({
      where: [
        { field: 'type', op: 'eq', value: 'Session' },
        { field: 'created_on', op: 'ge', value: '2026-11-02' },
      ],
    });
    expect(since.items.map((d) => d.id).sort()).toEqual(['s1', 's2']);
    await store.close();
    store = undefined;

    const typed = indexesOf(f).filter((i) => i.name.endsWith('_Session'));
    expect(typed).toHaveLength(2);
    for (const i of typed) expect(i.sql).toContain(`WHERE json_extract(body, '$.type') = 'Session'`);
    // Only the three sessions have entries: the messages are not in it.
    const db = new Database(f, { readonly: true });
    const entries = db
      .prepare(
        `SELECT count(*) AS n FROM docs_sessions INDEXED BY "${typed[0]?.name}" WHERE json_extract(body, ` +
          `'$.type') = 'Session'`,
      )
      .get() as { n: number };
    db.close();
    expect(entries.n).toBe(3);
  });

  it("opens an earlier release's file: tables in write order, typed indexes, no document or fact lost", async () => {
    const f = file();
    earlierFile(f);
    store = openSqliteStore(f);
    expect(indexesOf(f).map((i) => i.name)).toEqual([
      'ix_sessions_0_Session',
      'ix_sessions_1',
      'ix_sessions_2_Session',
      'sqlite_autoindex_docs_sessions_1',
    ]);
    const db = new Database(f, { readonly: true });
    const tables = db
      .prepare(
        `SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name IN ('docs_sessions', 'facts_sessions')`,
      )
      .all() as { name: string; sql: string }[];
    db.close();
    expect(tables.map((t) => t.name).sort()).toEqual(['docs_sessions', 'facts_sessions']);
    for (const t of tables) expect(t.sql).not.toMatch(/WITHOUT ROWID/i);

    expect(await sessionsByActivity(store)).toEqual(['s0', 's1', 's2']);
    const c = rawContainer(store, 'sessions');
    expect(await c.read('u1', 'm1')).toMatchObject({ session_id: 's1', _etag: '"e-m1"' });
    const perSession = await c.aggregate({
      where: [{ field: 'type', op: 'eq', value: 'Message' }],
      groupBy: ['session_id'],
      aggregates: { n: { fn: 'count' } },
    });
    expect(perSession.sort((a, b) => String(a.session_id).localeCompare(String(b.session_id)))).toEqual([
      { session_id: 's0', n: 1 },
      { session_id: 's1', n: 1 },
      { session_id: 's2', n: 1 },
    ]);
    // The key still refuses a second document of the same id.
    await expect(c.create({ id: 'm1', pk: 'u1', type: 'Message' })).rejects.toThrow(/already exists/);
  });

  it('binds a type that is not a plain name instead of writing it into the query', async () => {
    store = openSqliteStore(':memory:');
    await fill(store);
    const odd = await rawContainer(store, 'sessions').query({
      partition: 'u1',
      where: [{ field: 'type', op: 'eq', value: "Session' OR '1'='1" }],
    });
    expect(odd.items).toEqual([]);
  });
});
