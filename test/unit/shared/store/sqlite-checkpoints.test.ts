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
import { rawContainer } from '../../../support/raw-container.js';

describe('embedded store checkpoints', () => {
  let store: DocumentStore | undefined;
  afterEach(async () => {
    await store?.close();
  });

  it('copies the log into the database file off the request thread', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'checkpoints-'));
    const file = path.join(dir, 'store.db');
    store = openSqliteStore(file);
    const sessions = rawContainer(store, 'sessions');
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

  it('starts the log over even when writes never pause, so it does not grow with everything ever written', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'checkpoints-'));
    const file = path.join(dir, 'store.db');
    // A short interval, so the log holds a small part of what was written however slowly a loaded machine
    // writes (with the 2 s default, the last interval's writes alone came near a quarter of the total).
    store = openSqliteStore(file, undefined, { checkpointMs: 250 });
    const messages = rawContainer(store, 'sessions');
    const text = 'x'.repeat(2000);
    // About 100 MB of log in batches 20 ms apart, for many checkpoint intervals.
    const started = Date.now();
    for (let batch = 0; Date.now() - started < 7000; batch++) {
      await messages.createMany(
        Array.from({ length: 500 }, (_, i) => ({ id: `m${batch}-${i}`, pk: `user${i % 50}`, text })),
      );
      await new Promise((r) => setTimeout(r, 20));
    }
    // The frames now in the log (a passive checkpoint reports them; it changes nothing that matters here).
    const db = new Database(file);
    try {
      const [{ log }] = db.pragma('wal_checkpoint(PASSIVE)') as [{ log: number }];
      const written = (db.prepare('SELECT count(*) AS n FROM docs_sessions').get() as { n: number }).n;
      // Each document takes at least half a 4 KiB page of log: without restarts the log would hold them all.
      expect(written).toBeGreaterThan(10_000);
      expect(log).toBeLessThan(written / 4);
    } finally {
      db.close();
    }
  }, 20_000);
});
