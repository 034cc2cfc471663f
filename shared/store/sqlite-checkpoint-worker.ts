// The embedded store's checkpointer (see startCheckpointer): a read-write connection in a worker thread that
// copies the WAL into the database file on a timer, so the request thread never does.
import { workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';

const { file, intervalMs } = workerData as { file: string; intervalMs: number };
const db = new Database(file, { fileMustExist: true });
setInterval(() => {
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch {
    // busy (another process checkpointing): the next tick tries again
  }
}, intervalMs);
