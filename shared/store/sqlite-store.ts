// The embedded document store: one SQLite file, one table per container, JSON documents with expression
// indexes on the fields queries use. Synchronous SQLite under an async interface; every write runs in an
// immediate transaction (atomic even across processes sharing the file), grouped with the writes asked for
// beside it (sqlite-group-commit.ts).
// A container with aggregate fields also keeps them as plain columns in a "facts" table, written with
// each document: an index on expressions still makes SQLite visit every document, an index on columns
// does not, so analytics over a million records read only that index.
// This module opens the file and its containers; a container's tables are sqlite-schema.ts, its reads and
// writes sqlite-container.ts, the SQL of its queries sqlite-query.ts.
import { openSqliteFile } from './sqlite-file.js';
import { GroupCommit } from './sqlite-group-commit.js';
import { CONTAINER_LIST } from './containers.js';
import { SqliteContainer } from './sqlite-container.js';
import { ReaderPool, startCheckpointer } from './sqlite-readers.js';
import { readSchema } from './sqlite-schema.js';
import { containerNamed, type Container, type Doc, type DocumentStore } from './types.js';

/**
 * Opens (creating when needed) the SQLite file; `:memory:` gives a private in-memory store. Aggregates of
 * a file-backed store run on `readers` read-only connections in worker threads (0: on this thread); the log
 * is checkpointed every `checkpointMs`.
 */
export function openSqliteStore(
  file: string,
  definitions = CONTAINER_LIST,
  options: { readers?: number; checkpointMs?: number } = {},
): DocumentStore {
  const db = openSqliteFile(file, { mapped: false });
  db.pragma('temp_store = MEMORY');
  // Checkpoints (which fsync) run in a worker thread, never inside a commit nor on the event loop. It starts
  // with the first write: a process that has only read has nothing to checkpoint, and a cold start's first
  // answer does not share the CPU with a thread starting.
  db.pragma('wal_autocheckpoint = 0');
  let checkpointer: ReturnType<typeof startCheckpointer> | undefined;
  const startCheckpointing = () => {
    if (file !== ':memory:') checkpointer ??= startCheckpointer(file, options.checkpointMs ?? 2000);
  };
  const readerCount = file === ':memory:' ? 0 : (options.readers ?? 2);
  let pool: ReaderPool | undefined;
  // Started on first use: most processes never run an aggregate.
  const readers = () => (readerCount > 0 ? (pool ??= new ReaderPool(file, readerCount)) : undefined);
  const commits = new GroupCommit(db, startCheckpointing);
  const containers = new Map<string, Container<Doc>>();
  const schema = readSchema(db);
  for (const def of definitions) containers.set(def.name, new SqliteContainer({ db, def, commits, schema, readers }));
  return {
    kind: 'embedded',
    container: (name) => containerNamed(containers, name),
    async close() {
      if (db.open) commits.flush();
      await checkpointer?.stop();
      await pool?.close();
      if (db.open) {
        db.pragma('wal_checkpoint(TRUNCATE)');
        db.close();
      }
    },
  };
}
