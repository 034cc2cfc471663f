// The embedded store's WAL reaches the database file through the checkpointer thread: written documents are
// in the main file (read here without the WAL) within a few checkpoint intervals, while the store's own
// connection never checkpoints (its auto-checkpoint is off).
import { copyFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../../../shared/store/sqlite-store.js';
import type { DocumentStore } from '../../../../shared/store/types.js';

describe('embedded store checkpoints', () => {
  let store: DocumentStore | undefined;
  afterEach(async () => {
    await store?.close();
  });

  it('copies the log into the database file off the request thread', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'checkpoints-'));
    const file = path.join(dir, 'store.db');
    store = openSqliteStore(file);
    const sessions = store.container('sessions');
    for (let i = 0; i < 50; i++) await sessions.create({ id: `s${i}`, pk: 'alice' });

    /** Documents in the database file alone (a copy without its -wal, as after a crash that lost the log). */
    const inMainFile = () => {
      const copy = path.join(dir, `copy-${Date.now()}.db`);
      copyFileSync(file, copy);
      const db = new Database(copy, { readonly: true });
      try {
        return (db.prepare('SELECT count(*) AS n FROM docs_sessions').get() as { n: number }).n;
      } finally {
        db.close();
      }
    };
    await expect.poll(inMainFile, { timeout: 10_000, interval: 250 }).toBe(50);
  });
});
