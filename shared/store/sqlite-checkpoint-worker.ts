// The embedded store's checkpointer (see startCheckpointer): a read-write connection in a worker thread that
// copies the WAL into the database file on a timer, so the request thread never does.
import { workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';

/** A log longer than this (16 MiB of 4 KiB pages) is started over, even if a writer must wait a moment. */
const RESTART_PAGES = 4096;

const { file, intervalMs } = workerData as { file: string; intervalMs: number };
const db = new Database(file, { fileMustExist: true });
// How long a restart or truncation waits for the writer of the moment to finish.
db.pragma('busy_timeout = 2000');

/** The log's length at the previous tick: unchanged means nothing was written in between. */
let previous = 0;

setInterval(() => {
  try {
    const [result] = db.pragma('wal_checkpoint(PASSIVE)') as { log: number; checkpointed: number }[];
    if (!result) return;
    // The log starts over only when a write begins after a complete checkpoint. Writes that follow one another
    // closely (a bulk load, steady traffic) never find one, so the log grew without end and every read
    // searched it (seeding a million messages: a 14 GB log). Past the limit, a restart checkpoint waits for a
    // gap between writes and makes the next write start the log over.
    if (result.log > RESTART_PAGES) db.pragma('wal_checkpoint(RESTART)');
    // Pages left in the log are read from it with a system call each, not through the map (after a bulk
    // load, analytics over them took minutes): once writing has stopped and all is copied, empty it.
    else if (result.log > 0 && result.log === previous && result.checkpointed === result.log) db.pragma('wal_checkpoint(TRUNCATE)');
    previous = result.log;
  } catch {
    // busy (another process checkpointing, or no gap within the timeout): the next tick tries again
  }
}, intervalMs);
