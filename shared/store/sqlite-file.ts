// One way to open an SQLite file for the embedded adapters (the document store, the vector index): WAL,
// normal syncs, a busy timeout for other processes on the file. A connection that reads large ranges
// (vector searches, the store's aggregates on its reader threads) maps the file into memory: mapped pages,
// not copies through the page cache. The store's own connection does not: its reads are a few pages per
// request, which its page cache holds, and every page it maps stays in the process's resident memory
// (the whole file, 48 MiB of 212, after the peers benchmark; not mapping it: 1,120 completions/s with a
// session against 1,010). The page cache holds 8 MiB (64 MiB was a quarter of the process's memory
// after a load test, for no measured gain). A large transaction (a bulk load) keeps its changed pages in
// memory past that instead of spilling them into the WAL mid-transaction (seeding 200,000 messages with
// the file mapped: 20 s spilling, 12 s not).
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';

export function openSqliteFile(file: string, options: { mapped: boolean; pageSize?: number }): Database.Database {
  if (file !== ':memory:') mkdirSync(path.dirname(file), { recursive: true });
  const db = new Database(file);
  // Takes effect on a new file only (before its first write); an existing file keeps its page size.
  if (options.pageSize) db.pragma(`page_size = ${options.pageSize}`);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('busy_timeout = 5000');
  // A log started over is cut back to this size, so one burst of writes does not keep its disk space.
  db.pragma('journal_size_limit = 67108864');
  if (options.mapped) mapWholeFile(db);
  db.pragma('cache_size = -8192');
  db.pragma('cache_spill = OFF');
  return db;
}

/** As much of the file as SQLite maps (2 GiB): pages past the map are read with a system call each. */
export function mapWholeFile(db: Database.Database): void {
  db.pragma('mmap_size = 2147418112');
}
