// A read-only connection in a worker thread: runs aggregate queries off the event loop (WAL lets readers
// run beside the writer).
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { isObject } from './fields.js';
import { mapWholeFile } from './sqlite-file.js';

const start: unknown = workerData;
if (!isObject(start) || typeof start.file !== 'string') throw new Error('the reader was started without its file');
const db = new Database(start.file, { readonly: true, fileMustExist: true });
// Aggregates read large ranges: mapped pages, not copies.
mapWholeFile(db);
db.pragma('cache_size = -65536');
db.pragma('temp_store = MEMORY');
const statements = new Map<string, Database.Statement>();

parentPort?.on('message', (m: { id: number; sql: string; params: unknown[] }) => {
  try {
    let s = statements.get(m.sql);
    if (!s) {
      s = db.prepare(m.sql);
      if (statements.size < 200) statements.set(m.sql, s);
    }
    parentPort?.postMessage({ id: m.id, rows: s.all(...m.params) });
  } catch (e) {
    parentPort?.postMessage({ id: m.id, error: e instanceof Error ? e.message : String(e) });
  }
});
