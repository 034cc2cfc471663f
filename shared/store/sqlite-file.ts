// One way to open an SQLite file for the embedded adapters (the document store, the vector index): WAL,
// normal syncs, a busy timeout for other processes on the file, and the file mapped into memory, since
// aggregates and vector searches read large ranges (mapped pages, not copies through the page cache). The
// page cache then holds little more than the pages writes change: 8 MiB (64 MiB was a quarter of the
// process's memory after a load test, for no measured gain). A large transaction (a bulk load) keeps its
// changed pages in memory past that instead of spilling them into the WAL mid-transaction, which, with the
// map, made every later read of them a system call (seeding 200,000 messages: 20 s spilling, 12 s not).
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';

export function openSqliteFile(file: string): Database.Database {
  if (file !== ':memory:') mkdirSync(path.dirname(file), { recursive: true });
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('busy_timeout = 5000');
  // A log started over is cut back to this size, so one burst of writes does not keep its disk space.
  db.pragma('journal_size_limit = 67108864');
  // As much of the file as SQLite maps (2 GiB): pages past the map are read with a system call each.
  db.pragma('mmap_size = 2147418112');
  db.pragma('cache_size = -8192');
  db.pragma('cache_spill = OFF');
  return db;
}
