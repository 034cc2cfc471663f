// The embedded store's checkpointer (see startCheckpointer): a read-write connection in a worker thread that
// copies the WAL into the database file on a timer, so the request thread never does.
import { workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { isObject } from './fields.js';
import { rowOf } from './sqlite-rows.js';

/** A log longer than this (16 MiB of 4 KiB pages) is emptied, even if a writer must wait a moment. */
const RESTART_PAGES = 4096;

/** What the store starts the worker with (startCheckpointer). */
const isStart = (data: unknown): data is { file: string; intervalMs: number } =>
  isObject(data) && typeof data.file === 'string' && typeof data.intervalMs === 'number';
/** A checkpoint's answer: the log's pages and how many of them are copied into the file. */
const isCheckpoint = (r: unknown): r is { log: number; checkpointed: number } =>
  isObject(r) && typeof r.log === 'number' && typeof r.checkpointed === 'number';

const start: unknown = workerData;
if (!isStart(start)) throw new Error('the checkpointer was started without its file');
const { file, intervalMs } = start;
const db = new Database(file, { fileMustExist: true });
// How long emptying the log waits for the writer of the moment to finish.
db.pragma('busy_timeout = 2000');

setInterval(() => {
  try {
    const rows: unknown = db.pragma('wal_checkpoint(PASSIVE)');
    const result = rowOf(Array.isArray(rows) ? rows[0] : undefined, isCheckpoint);
    // The log starts over only when a write begins after a complete checkpoint. Writes that follow one another
    // closely (a bulk load, steady traffic) never find one, so the log grew without end and every read
    // searched it (seeding a million messages: a 14 GB log, queries taking minutes). And pages still in the
    // log are read from it with a system call each, not through the map: after a bulk load, aggregates over
    // them took minutes. So once the log is all copied, or past the limit, a truncating checkpoint waits for
    // a gap between writes and empties it.
    if (result && result.log > 0 && (result.checkpointed === result.log || result.log > RESTART_PAGES))
      db.pragma('wal_checkpoint(TRUNCATE)');
  } catch {
    // busy (another process checkpointing, or no gap within the timeout): the next tick tries again
  }
}, intervalMs);
