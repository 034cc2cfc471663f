// The embedded store answers aggregates over a container's aggregate fields from its facts table: those
// answers follow every kind of write, and a file from before the facts table is filled on open.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../../../shared/store/sqlite-store.js';
import type { Doc, DocumentStore } from '../../../../shared/store/types.js';
import { rawContainer } from '../../../support/raw-container.js';

interface Message extends Doc {
  type: 'Message';
  sender: 'User' | 'Assistant';
  agent_name: string;
  upn: string;
  session_id: string;
  timestamp: string;
  text: string;
}

const message = (n: number, agent: string, upn: string): Message => ({
  id: `m${n}`,
  pk: upn,
  type: 'Message',
  sender: n % 2 === 0 ? 'User' : 'Assistant',
  agent_name: agent,
  upn,
  session_id: `s-${upn}-${n % 3}`,
  timestamp: `2026-11-0${(n % 5) + 1}T10:00:00.000Z`,
  text: `text ${n}`,
});

/** Responses, users and conversations per agent: the AllAgents shape. */
async function perAgent(store: DocumentStore) {
  const rows = await rawContainer<Message>(store, 'sessions').aggregate({
    where: [
      { field: 'type', op: 'eq', value: 'Message' },
      { field: 'sender', op: 'eq', value: 'Assistant' },
      { field: 'timestamp', op: 'ge', value: '2026-11-01' },
    ],
    groupBy: ['agent_name'],
    aggregates: {
      responses: { fn: 'count' },
      users: { fn: 'countDistinct', field: 'upn' },
      conversations: { fn: 'countDistinct', field: 'session_id' },
    },
  });
  return rows.sort((a, b) => String(a.agent_name).localeCompare(String(b.agent_name)));
}

describe('embedded store facts table', () => {
  let store: DocumentStore | undefined;
  afterEach(() => store?.close());

  it('follows creates, patches, replaces, upserts and deletes', async () => {
    store = openSqliteStore(':memory:');
    const c = rawContainer<Message>(store, 'sessions');
    // Assistant messages: m1 (a, u1, s-u1-1), m3 (a, u1, s-u1-0), m5 (b, u2, s-u2-2), m7 (b, u2, s-u2-1).
    await c.createMany([
      message(0, 'a', 'u1'),
      message(1, 'a', 'u1'),
      message(2, 'a', 'u1'),
      message(3, 'a', 'u1'),
      message(5, 'b', 'u2'),
      message(7, 'b', 'u2'),
    ]);
    expect(await perAgent(store)).toEqual([
      { agent_name: 'a', responses: 2, users: 1, conversations: 2 },
      { agent_name: 'b', responses: 2, users: 1, conversations: 2 },
    ]);

    await c.patch('u2', 'm5', [{ op: 'set', path: 'agent_name', value: 'a' }]);
    const m7 = await c.read('u2', 'm7');
    if (!m7) throw new Error('m7 missing');
    await c.replace({ ...m7, sender: 'User' });
    await c.upsert({ ...message(9, 'c', 'u3') });
    await c.delete('u1', 'm3');
    expect(await perAgent(store)).toEqual([
      { agent_name: 'a', responses: 2, users: 2, conversations: 2 },
      { agent_name: 'c', responses: 1, users: 1, conversations: 1 },
    ]);

    // A batch's updates: one moves a response to agent c; one changes only the text, which no fact holds.
    await c.writeBatch('u1', [{ op: 'update', id: 'm1', apply: (m) => ({ ...m, agent_name: 'c' }) }]);
    await c.writeBatch('u2', [{ op: 'update', id: 'm5', apply: (m) => ({ ...m, text: 'edited' }) }]);
    expect(await perAgent(store)).toEqual([
      { agent_name: 'a', responses: 1, users: 1, conversations: 1 },
      { agent_name: 'c', responses: 2, users: 2, conversations: 2 },
    ]);
  });

  it('answers filters the facts cannot (a field outside them) from the documents, alike', async () => {
    store = openSqliteStore(':memory:');
    const c = rawContainer<Message>(store, 'sessions');
    await c.createMany([message(1, 'a', 'u1'), message(3, 'a', 'u2'), message(5, 'b', 'u2')]);
    const [row] = await c.aggregate({
      where: [
        { field: 'text', op: 'startsWith', value: 'text ' },
        { field: 'agent_name', op: 'eq', value: 'a' },
      ],
      aggregates: { users: { fn: 'countDistinct', field: 'upn' } },
    });
    expect(row).toEqual({ users: 2 });
  });

  /** A store file of three messages, changed by `earlier` as an earlier release left it, opened again. */
  async function reopened(earlier: (db: Database.Database) => void): Promise<DocumentStore> {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'facts-')), 'store.db');
    store = openSqliteStore(file, undefined, { readers: 0 });
    await rawContainer<Message>(store, 'sessions').createMany([
      message(1, 'a', 'u1'),
      message(3, 'b', 'u1'),
      message(5, 'b', 'u2'),
    ]);
    await store.close();
    const db = new Database(file);
    earlier(db);
    db.close();
    return (store = openSqliteStore(file, undefined, { readers: 0 }));
  }
  const THREE = [
    { agent_name: 'a', responses: 1, users: 1, conversations: 1 },
    { agent_name: 'b', responses: 2, users: 2, conversations: 2 },
  ];

  it('fills the facts table of a file written before it existed', async () => {
    expect(await perAgent(await reopened((db) => db.exec('DROP TABLE facts_sessions')))).toEqual(THREE);
  });

  it('rebuilds the facts table of a file written with other aggregate fields', async () => {
    // Positional columns, one field fewer.
    const s = await reopened((db) => {
      db.exec('DROP TABLE facts_sessions');
      db.exec(
        'CREATE TABLE facts_sessions (pk TEXT NOT NULL, id TEXT NOT NULL, expires_at INTEGER, c0, c1, PRIMARY ' +
          'KEY (pk, id)) WITHOUT ROWID',
      );
    });
    expect(await perAgent(s)).toEqual(THREE);
    await rawContainer<Message>(s, 'sessions').createMany([message(7, 'a', 'u3')]);
    expect((await perAgent(s))[0]).toEqual({ agent_name: 'a', responses: 2, users: 2, conversations: 2 });
  });
});
