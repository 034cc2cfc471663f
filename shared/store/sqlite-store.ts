// The embedded document store: one SQLite file, one table per container, JSON documents with expression
// indexes on the fields queries use. Synchronous SQLite under an async interface; every write runs in an
// immediate transaction (atomic even across processes sharing the file), grouped with the writes asked for
// beside it (sqlite-group-commit.ts).
// A container with aggregate fields also keeps them as plain columns in a "facts" table, written with
// each document: an index on expressions still makes SQLite visit every document, an index on columns
// does not, so analytics over a million records read only that index.
import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import { openSqliteFile } from './sqlite-file.js';
import { GroupCommit } from './sqlite-group-commit.js';
import { CONTAINER_LIST, indexFields, type ContainerDefinition } from './containers.js';
import { alias, getPath, segments, updatePath } from './fields.js';
import { ReaderPool, startCheckpointer } from './sqlite-readers.js';
import {
  ConflictError,
  NotFoundError,
  PreconditionFailedError,
  StoreError,
  type AggregateQuery,
  type AggregateRow,
  inBatch,
  type BatchOperation,
  type Container,
  type Doc,
  type DocumentStore,
  type Filter,
  type JsonScalar,
  type Page,
  type PatchOp,
  type Query,
  type Stored,
  type WriteOptions,
} from './types.js';

type Row = { body: string; etag: string };
type Bind = string | number | null;

/** How many updated documents a container keeps its last written version of. */
const WRITTEN_KEPT = 256;
const writtenKey = (pk: string, id: string) => `${pk}\u0000${id}`;

// ETags: a random prefix per process and a counter, unique across processes sharing the file without a
// call for random bytes on every write.
const etagPrefix = randomBytes(8).toString('hex');
let etagCounter = 0;
const newEtag = () => `"${etagPrefix}-${(etagCounter++).toString(36)}"`;
const jsonExpr = (field: string) => `json_extract(body, '$.${segments(field).join('.')}')`;
const bind = (v: JsonScalar): Bind => (typeof v === 'boolean' ? (v ? 1 : 0) : v);
/** A document field as json_extract returns it: scalars as they are, objects and arrays as JSON text. */
const extracted = (v: unknown): Bind => (v === undefined || v === null ? null : typeof v === 'object' ? JSON.stringify(v) : bind(v as JsonScalar));
const sameValues = (a: readonly Bind[], b: readonly Bind[]) => a.length === b.length && a.every((v, i) => v === b[i]);
/** Operators a facts column answers like the document; the others look inside values. */
const COLUMN_OPS = new Set<Filter['op']>(['eq', 'ne', 'lt', 'le', 'gt', 'ge', 'in', 'startsWith', 'includes']);

/** Where an aggregate reads its fields: the documents, or the container's facts table. */
interface AggregateSource {
  table: string;
  column: (field: string) => string;
  /** Whether SQLite scans a covering index for a GROUP BY over it (not over expressions). */
  columns: boolean;
}

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
  const containers = new Map<string, SqliteContainer<Doc>>();
  const schema = readSchema(db);
  for (const def of definitions) containers.set(def.name, new SqliteContainer(db, def, commits, schema, readers));
  return {
    kind: 'embedded',
    container<T extends Doc>(name: string): Container<T> {
      const c = containers.get(name);
      if (!c) throw new StoreError(`Unknown container ${name}`);
      return c as unknown as Container<T>;
    },
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

class SqliteContainer<T extends Doc> implements Container<T> {
  private readonly table: string;
  /** Whether documents can expire: only then do reads filter on expires_at. */
  private readonly ttl: boolean;
  private readonly statements = new Map<string, Database.Statement>();
  /** The versions this container last wrote of the documents it updated, by writtenKey (see current()). */
  private readonly written = new Map<string, Stored<T>>();
  /** The facts table of the aggregate fields, if any: field path to its column, and the row writer. */
  private readonly facts: { table: string; columns: Map<string, string>; insert: string } | undefined;

  constructor(
    private readonly db: Database.Database,
    private readonly def: ContainerDefinition,
    private readonly commits: GroupCommit,
    private readonly schema: Schema,
    private readonly readers: () => ReaderPool | undefined = () => undefined,
  ) {
    this.table = `docs_${def.name}`;
    this.createTable();
    this.createIndexes();
    if (def.aggregateFields) this.facts = this.createFacts(def.aggregateFields);
    this.ttl = def.defaultTtlSeconds !== undefined;
    if (def.defaultTtlSeconds !== undefined) {
      for (const table of [this.table, this.facts?.table]) {
        if (table) db.prepare(`DELETE FROM "${table}" WHERE expires_at IS NOT NULL AND expires_at <= ?`).run(Date.now());
      }
    }
  }

  /**
   * The documents' table. Rows are kept in the order written (a rowid table), the key (pk, id) a unique index
   * beside them: a new document is appended, where a table ordered by its random ids (WITHOUT ROWID, as
   * earlier releases wrote it, rebuilt here) dirtied a page somewhere in the middle for each.
   */
  private createTable(): void {
    const columns = 'pk TEXT NOT NULL, id TEXT NOT NULL, etag TEXT NOT NULL, expires_at INTEGER, body TEXT NOT NULL, PRIMARY KEY (pk, id)';
    if (!this.schema.tables.has(this.table)) return void this.db.exec(`CREATE TABLE IF NOT EXISTS "${this.table}" (${columns})`);
    if (!withoutRowid(this.schema, this.table)) return;
    const next = `${this.table}_next`;
    this.db.transaction(() => {
      this.db.exec(`DROP TABLE IF EXISTS "${next}"`);
      this.db.exec(`CREATE TABLE "${next}" (${columns})`);
      this.db.exec(`INSERT INTO "${next}" (pk, id, etag, expires_at, body) SELECT pk, id, etag, expires_at, body FROM "${this.table}" ORDER BY pk, id`);
      this.db.exec(`DROP TABLE "${this.table}"`);
      this.db.exec(`ALTER TABLE "${next}" RENAME TO "${this.table}"`);
    }).immediate();
    // Its indexes went with the table.
    this.schema.indexes.delete(this.table);
  }

  /**
   * The indexes of the definition, an index of one type partial (only that type's documents have entries).
   * An index of this table that the definition no longer names (one of an earlier release) is dropped.
   */
  private createIndexes(): void {
    const wanted = new Map(
      this.def.indexes.map((index, i) => {
        const type = 'type' in index ? index.type : undefined;
        const name = type ? `ix_${this.def.name}_${i}_${type}` : `ix_${this.def.name}_${i}`;
        const where = type ? ` WHERE ${typeIs(type)}` : '';
        return [name, `CREATE INDEX IF NOT EXISTS "${name}" ON "${this.table}" (${indexFields(index).map(jsonExpr).join(', ')})${where}`];
      }),
    );
    const existing = this.schema.indexes.get(this.table) ?? [];
    for (const name of existing) if (name.startsWith('ix_') && !wanted.has(name)) this.db.exec(`DROP INDEX "${name}"`);
    for (const [name, sql] of wanted) if (!existing.includes(name)) this.db.exec(sql);
  }

  /**
   * Creates the facts table and its covering index; fills it from the documents when it is new. Its columns
   * are named after the fields, so a file written with other aggregate fields has its table rebuilt.
   */
  private createFacts(fields: readonly string[]) {
    const table = `facts_${this.def.name}`;
    const columns = new Map(fields.map((f) => [f, `"f:${f.replace(/"/g, '')}"`]));
    const names = [...columns.values()];
    const existing = (this.db.prepare(`SELECT name FROM pragma_table_info(?)`).all(table) as { name: string }[]).map((c) => `"${c.name}"`);
    const wanted = ['"pk"', '"id"', '"expires_at"', ...names];
    const isNew = existing.length !== wanted.length || existing.some((c, i) => c !== wanted[i]) || withoutRowid(this.schema, table);
    const index = `ix_${table}`;
    const createIndex = () => this.db.exec(`CREATE INDEX IF NOT EXISTS "${index}" ON "${table}" (${names.join(', ')}, expires_at)`);
    if (!isNew) {
      if (!this.schema.indexes.get(table)?.includes(index)) createIndex();
    } else {
      // Rebuilt and filled in one transaction: a start cut short leaves the old table, not a partly filled one.
      const types = this.def.aggregateTypes ? ` WHERE ${jsonExpr('type')} IN (${this.def.aggregateTypes.map(typeLiteral).join(', ')})` : '';
      this.db.transaction(() => {
        this.db.exec(`DROP TABLE IF EXISTS "${table}"`);
        this.db.exec(`CREATE TABLE "${table}" (pk TEXT NOT NULL, id TEXT NOT NULL, expires_at INTEGER, ${names.join(', ')}, PRIMARY KEY (pk, id))`);
        createIndex();
        this.db.exec(`INSERT INTO "${table}" SELECT pk, id, expires_at, ${fields.map(jsonExpr).join(', ')} FROM "${this.table}"${types}`);
      }).immediate();
    }
    const insert = `INSERT OR REPLACE INTO "${table}" (pk, id, expires_at, ${names.join(', ')}) VALUES (?, ?, ?${', ?'.repeat(names.length)})`;
    return { table, columns, insert };
  }

  get name() {
    return this.def.name;
  }

  private stmt(sql: string): Database.Statement {
    let s = this.statements.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      if (this.statements.size < 500) this.statements.set(sql, s);
    }
    return s;
  }

  private readRow(pk: string, id: string): Row | undefined {
    return this.liveRow<Row>('body, etag', pk, id);
  }

  /** A row's ETag alone: what a delete or a known version needs, without the body. */
  private readEtag(pk: string, id: string): Pick<Row, 'etag'> | undefined {
    return this.liveRow<Pick<Row, 'etag'>>('etag', pk, id);
  }

  /** `columns` of the row (pk, id), unless it has expired. */
  private liveRow<R>(columns: string, pk: string, id: string): R | undefined {
    const sql = `SELECT ${columns} FROM "${this.table}" WHERE pk = ? AND id = ?`;
    if (!this.ttl) return this.stmt(sql).get(pk, id) as R | undefined;
    return this.stmt(`${sql} AND (expires_at IS NULL OR expires_at > ?)`).get(pk, id, Date.now()) as R | undefined;
  }

  /**
   * The stored version of a document to update: the caller's copy, or the last one this container wrote
   * of it, when the row still has that ETag (its body is then neither read nor parsed; a busy session's
   * turns each start from the one before), else the row itself.
   */
  private current(pk: string, id: string, known: Stored<T> | undefined): Stored<T> | undefined {
    const mine = this.written.get(writtenKey(pk, id));
    if (known || mine) {
      const found = this.readEtag(pk, id);
      if (!found) return undefined;
      if (known?._etag === found.etag) return known;
      if (mine?._etag === found.etag) return mine;
    }
    const row = this.readRow(pk, id);
    return row ? parse<T>(row) : undefined;
  }

  /** Keeps the version just written of an updated document (the last WRITTEN_KEPT documents). */
  private remember(pk: string, id: string, doc: Stored<T>): void {
    const key = writtenKey(pk, id);
    this.written.delete(key);
    this.written.set(key, doc);
    if (this.written.size > WRITTEN_KEPT) this.written.delete(this.written.keys().next().value as string);
  }

  private expiresAt(doc: T): number | null {
    const ttl = doc.ttl ?? this.def.defaultTtlSeconds;
    return ttl !== undefined && ttl > 0 ? Date.now() + ttl * 1000 : null;
  }

  private write(doc: T, sqlVerb: 'INSERT' | 'INSERT OR REPLACE'): Stored<T> {
    const clean = strip(doc);
    const etag = newEtag();
    const expiresAt = this.expiresAt(clean);
    this.stmt(`${sqlVerb} INTO "${this.table}" (pk, id, etag, expires_at, body) VALUES (?, ?, ?, ?, ?)`).run(clean.pk, clean.id, etag, expiresAt, JSON.stringify(clean));
    this.writeFacts(clean, expiresAt);
    return { ...clean, _etag: etag };
  }

  /**
   * Writes a document's facts. `replaced`: the version the write replaced; when its facts are the same and
   * neither expires, the row stays as it is (a session's turn changes none of the session's facts, and an
   * unchanged row costs the commit no pages).
   */
  private writeFacts(clean: T, expiresAt: number | null, replaced?: T): void {
    if (!this.facts) return;
    const type = getPath(clean, 'type');
    if (this.def.aggregateTypes && typeof type === 'string' && !this.def.aggregateTypes.includes(type)) return;
    const values = this.factsOf(clean);
    const unchanged = replaced && getPath(replaced, 'type') === type && expiresAt === null && this.expiresAt(replaced) === null && sameValues(values, this.factsOf(replaced));
    if (unchanged) return;
    this.stmt(this.facts.insert).run(clean.pk, clean.id, expiresAt, ...values);
  }

  private factsOf(doc: T): Bind[] {
    return this.def.aggregateFields?.map((f) => extracted(getPath(doc, f))) ?? [];
  }

  /**
   * Inserts a document that must not exist. The primary key says whether it does (no read first), except
   * where documents expire: an expired row still holds the key, so it is read, and replaced.
   */
  private insertNew(doc: T): Stored<T> {
    const conflict = () => new ConflictError(`${this.name}/${doc.pk}/${doc.id} already exists`);
    if (this.ttl) {
      if (this.readRow(doc.pk, doc.id)) throw conflict();
      return this.write(doc, 'INSERT OR REPLACE');
    }
    try {
      return this.write(doc, 'INSERT');
    } catch (e) {
      if ((e as { code?: string }).code === 'SQLITE_CONSTRAINT_PRIMARYKEY') throw conflict();
      throw e;
    }
  }

  /**
   * Replaces a document that must exist (with the ETag `ifMatch`, when given) in one UPDATE; only when it
   * changes nothing is the row read, to tell a missing document from a changed one.
   */
  private replaceExisting(doc: T, ifMatch: string | undefined, replaced?: T): Stored<T> {
    const clean = strip(doc);
    const etag = newEtag();
    const expiresAt = this.expiresAt(clean);
    const params: Bind[] = [etag, expiresAt, JSON.stringify(clean), clean.pk, clean.id];
    let sql = `UPDATE "${this.table}" SET etag = ?, expires_at = ?, body = ? WHERE pk = ? AND id = ?`;
    if (ifMatch !== undefined) {
      sql += ' AND etag = ?';
      params.push(ifMatch);
    }
    if (this.ttl) {
      sql += ' AND (expires_at IS NULL OR expires_at > ?)';
      params.push(Date.now());
    }
    if (this.stmt(sql).run(...params).changes === 0) {
      if (!this.readRow(clean.pk, clean.id)) throw new NotFoundError(`${this.name}/${clean.pk}/${clean.id} not found`);
      throw new PreconditionFailedError(`${this.name}/${clean.id} was changed by another writer`);
    }
    this.writeFacts(clean, expiresAt, replaced);
    return { ...clean, _etag: etag };
  }

  read(pk: string, id: string): Promise<Stored<T> | undefined> {
    return this.run(() => {
      const row = this.readRow(pk, id);
      return row ? parse<T>(row) : undefined;
    });
  }

  create(doc: T): Promise<Stored<T>> {
    return this.tx(() => this.insertNew(doc));
  }

  async createMany(docs: readonly T[]): Promise<void> {
    const existing = await this.tx(() => {
      let found = 0;
      for (const doc of docs) {
        if (this.readRow(doc.pk, doc.id)) found++;
        else this.write(doc, 'INSERT OR REPLACE');
      }
      return found;
    });
    if (existing > 0) throw new ConflictError(`${existing} of ${docs.length} documents already existed`);
  }

  writeBatch(pk: string, operations: readonly BatchOperation<T>[]): Promise<void> {
    return this.tx(() => {
      for (const o of operations) {
        if (o.op === 'update') {
          const current = this.current(pk, o.id, o.known);
          if (!current) throw new NotFoundError(`${this.name}/${pk}/${o.id} not found`);
          const next = o.apply(current);
          if (next) this.remember(pk, o.id, this.replaceExisting(inBatch(next, pk, o.id), current._etag, current));
        } else if (o.op === 'create') {
          this.insertNew(inBatch(o.doc, pk));
        } else if (o.op === 'delete') {
          const row = this.readEtag(pk, o.id);
          if (!row) throw new NotFoundError(`${this.name}/${pk}/${o.id} not found`);
          this.check(row, o.ifMatch, o.id);
          this.removeRow(pk, o.id);
        } else {
          this.replaceExisting(inBatch(o.doc, pk), o.ifMatch);
        }
      }
    });
  }

  upsert(doc: T, options: WriteOptions = {}): Promise<Stored<T>> {
    return this.tx(() => {
      if (options.ifMatch !== undefined) this.check(this.readRow(doc.pk, doc.id), options.ifMatch, doc.id);
      return this.write(doc, 'INSERT OR REPLACE');
    });
  }

  replace(doc: T, options: WriteOptions = {}): Promise<Stored<T>> {
    return this.tx(() => this.replaceExisting(doc, options.ifMatch));
  }

  delete(pk: string, id: string, options: WriteOptions = {}): Promise<boolean> {
    return this.tx(() => {
      const row = this.readEtag(pk, id);
      if (!row) return false;
      this.check(row, options.ifMatch, id);
      this.removeRow(pk, id);
      return true;
    });
  }

  private removeRow(pk: string, id: string): void {
    this.stmt(`DELETE FROM "${this.table}" WHERE pk = ? AND id = ?`).run(pk, id);
    if (this.facts) this.stmt(`DELETE FROM "${this.facts.table}" WHERE pk = ? AND id = ?`).run(pk, id);
  }

  patch(pk: string, id: string, ops: readonly PatchOp[], options: WriteOptions = {}): Promise<Stored<T>> {
    return this.tx(() => {
      const row = this.readRow(pk, id);
      if (!row) throw new NotFoundError(`${this.name}/${pk}/${id} not found`);
      this.check(row, options.ifMatch, id);
      const doc = JSON.parse(row.body) as T & Record<string, unknown>;
      for (const op of ops) applyPatch(doc, op);
      return this.write(doc, 'INSERT OR REPLACE');
    });
  }

  query(q: Query): Promise<Page<Stored<T>>> {
    return this.run(() => this.querySync(q));
  }

  private querySync(q: Query): Page<Stored<T>> {
    const params: Bind[] = [];
    const whereSql = this.where(q.partition, q.where, params);
    const order = (q.orderBy ?? []).map((o) => `${jsonExpr(o.field)} ${o.direction === 'desc' ? 'DESC' : 'ASC'}`);
    const offset = decodeContinuation(q.continuation);
    const limit = q.limit ?? -1;
    const sql = `SELECT body, etag FROM "${this.table}"${whereSql} ORDER BY ${[...order, 'pk', 'id'].join(', ')} LIMIT ? OFFSET ?`;
    // One extra row tells whether another page follows.
    const rows = this.stmt(sql).all(...params, limit < 0 ? -1 : limit + 1, offset) as Row[];
    const more = limit >= 0 && rows.length > limit;
    const items = (more ? rows.slice(0, limit) : rows).map((r) => parse<T>(r));
    return more ? { items, continuation: encodeContinuation(offset + limit) } : { items };
  }

  async aggregate(q: AggregateQuery): Promise<AggregateRow[]> {
    const { sql, params, shape } = this.aggregateSql(q);
    const pool = this.readers();
    const rows = (pool ? await pool.run(sql, params) : await this.run(() => this.stmt(sql).all(...params))) as Record<string, JsonScalar>[];
    return rows.map(shape);
  }

  /** The facts table when it holds every field the aggregate reads, else the documents. */
  private aggregateSource(q: AggregateQuery): AggregateSource {
    const facts = this.facts;
    const fields = [...(q.where ?? []).map((f) => f.field), ...(q.groupBy ?? []), ...Object.values(q.aggregates).flatMap((a) => ('field' in a ? [a.field] : []))];
    if (facts && fields.every((f) => facts.columns.has(f)) && (q.where ?? []).every((f) => COLUMN_OPS.has(f.op))) {
      return { table: facts.table, column: (f) => facts.columns.get(f) as string, columns: true };
    }
    return { table: this.table, column: jsonExpr, columns: false };
  }

  /**
   * Aggregates over the facts table scan its covering index. Over the documents, grouped aggregates first
   * select the fields into a materialized row set: SQLite would fetch every document for a GROUP BY over
   * expressions.
   */
  private aggregateSql(q: AggregateQuery): { sql: string; params: Bind[]; shape: (r: Record<string, JsonScalar>) => AggregateRow } {
    const params: Bind[] = [];
    const groupBy = q.groupBy ?? [];
    const source = this.aggregateSource(q);
    const whereSql = this.where(q.partition, q.where, params, source.column);
    const aggregates = Object.entries(q.aggregates);
    const call = (a: (typeof aggregates)[number][1], value: string) =>
      a.fn === 'count' ? 'COUNT(*)' : a.fn === 'countDistinct' ? `COUNT(DISTINCT ${value})` : `${a.fn.toUpperCase()}(${value})`;
    const results = aggregates.map(([name, a]) => `${call(a, 'field' in a ? source.column(a.field) : '')} AS "${alias(name)}"`);
    let sql: string;
    if (groupBy.length === 0) {
      sql = `SELECT ${results.join(', ')} FROM "${source.table}"${whereSql}`;
    } else if (source.columns) {
      const keys = groupBy.map((g, i) => `${source.column(g)} AS g${i}`);
      sql = `SELECT ${[...keys, ...results].join(', ')} FROM "${source.table}"${whereSql} GROUP BY ${groupBy.map((_, i) => `g${i}`).join(', ')}`;
    } else {
      const inner = [...groupBy.map((g, i) => `${jsonExpr(g)} AS g${i}`), ...aggregates.map(([, a], i) => ('field' in a ? `${jsonExpr(a.field)} AS a${i}` : `1 AS a${i}`))];
      const outer = [...groupBy.map((_, i) => `g${i}`), ...aggregates.map(([name, a], i) => `${call(a, `a${i}`)} AS "${alias(name)}"`)];
      const keys = groupBy.map((_, i) => `g${i}`).join(', ');
      sql = `WITH r AS MATERIALIZED (SELECT ${inner.join(', ')} FROM "${this.table}"${whereSql}) SELECT ${outer.join(', ')} FROM r GROUP BY ${keys}`;
    }
    return {
      sql,
      params,
      shape: (r) => {
        const out: AggregateRow = {};
        groupBy.forEach((g, i) => (out[g] = r[`g${i}`] ?? null));
        for (const name of Object.keys(q.aggregates)) out[name] = r[name] ?? null;
        return out;
      },
    };
  }

  private where(partition: string | undefined, filters: readonly Filter[] | undefined, params: Bind[], column = jsonExpr): string {
    const parts: string[] = [];
    if (this.ttl) {
      parts.push('(expires_at IS NULL OR expires_at > ?)');
      params.push(Date.now());
    }
    if (partition !== undefined) {
      parts.push('pk = ?');
      params.push(partition);
    }
    for (const f of filters ?? []) parts.push(sqliteCondition(f, params, column));
    return parts.length > 0 ? ` WHERE ${parts.join(' AND ')}` : '';
  }

  private check(row: Pick<Row, 'etag'> | undefined, ifMatch: string | undefined, id: string) {
    if (ifMatch !== undefined && (!row || row.etag !== ifMatch)) {
      throw new PreconditionFailedError(`${this.name}/${id} was changed by another writer`);
    }
  }

  /** Runs synchronous SQLite work as a promise, so failures reject rather than throw. */
  private run<R>(fn: () => R): Promise<R> {
    try {
      return Promise.resolve(fn());
    } catch (e) {
      return Promise.reject(e instanceof Error ? e : new StoreError(String(e)));
    }
  }

  /** Read-check-write in one immediate transaction (with the other writes of this loop turn). */
  private tx<R>(fn: () => R): Promise<R> {
    return this.commits.run(fn);
  }
}

/** The file's tables (their CREATE statements) and each table's indexes, as the store opened it. */
interface Schema {
  tables: Map<string, string>;
  indexes: Map<string, string[]>;
}

function readSchema(db: Database.Database): Schema {
  const rows = db.prepare(`SELECT type, name, tbl_name AS tableName, sql FROM sqlite_master WHERE type IN ('table', 'index')`).all() as { type: string; name: string; tableName: string; sql: string | null }[];
  const schema: Schema = { tables: new Map(), indexes: new Map() };
  for (const r of rows) {
    if (r.type === 'table') schema.tables.set(r.name, r.sql ?? '');
    else schema.indexes.set(r.tableName, [...(schema.indexes.get(r.tableName) ?? []), r.name]);
  }
  return schema;
}

/** Whether the table exists as a WITHOUT ROWID table (as releases before rowid tables wrote them). */
const withoutRowid = (schema: Schema, table: string) => /WITHOUT\s+ROWID\s*$/i.test(schema.tables.get(table) ?? '');

const TYPE_NAME = /^\w+$/;
/**
 * `type` equal to a type name, the name written as a literal: SQLite answers a query from a partial index of
 * that type only where the query's terms say as much, and it cannot tell what a bound parameter will hold.
 */
const typeIs = (type: string, field = jsonExpr('type')) => `${field} = ${typeLiteral(type)}`;

/** A type name as an SQL literal; only a plain name may be written into SQL. */
function typeLiteral(type: string): string {
  if (!TYPE_NAME.test(type)) throw new StoreError(`Not a type name: ${type}`);
  return `'${type}'`;
}

function sqliteCondition(f: Filter, params: Bind[], column: (field: string) => string): string {
  const field = column(f.field);
  if (f.op === 'eq' && f.field === 'type' && typeof f.value === 'string' && TYPE_NAME.test(f.value)) return typeIs(f.value, field);
  const ops = { eq: '=', ne: '!=', lt: '<', le: '<=', gt: '>', ge: '>=' } as const;
  switch (f.op) {
    case 'eq':
    case 'ne':
    case 'lt':
    case 'le':
    case 'gt':
    case 'ge':
      params.push(bind(f.value));
      return `${field} ${ops[f.op]} ?`;
    case 'in':
      if (f.value.length === 0) return '0';
      params.push(...f.value.map(bind));
      return `${field} IN (${f.value.map(() => '?').join(', ')})`;
    case 'startsWith':
      params.push(f.value.length, f.value);
      return `substr(${field}, 1, ?) = ?`;
    case 'includes':
      params.push(f.value);
      return `instr(${field}, ?) > 0`;
    case 'contains':
      params.push(bind(f.value));
      return `EXISTS (SELECT 1 FROM json_each(body, '$.${segments(f.field).join('.')}') WHERE value = ?)`;
    case 'exists':
      return `json_type(body, '$.${segments(f.field).join('.')}') IS NOT NULL`;
    case 'missing':
      return `json_type(body, '$.${segments(f.field).join('.')}') IS NULL`;
  }
}

function applyPatch(doc: Record<string, unknown>, op: PatchOp): void {
  updatePath(doc, op.path, (parent, key) => {
    switch (op.op) {
      case 'set':
        parent[key] = op.value;
        return;
      case 'remove':
        Reflect.deleteProperty(parent, key);
        return;
      case 'incr': {
        const current = parent[key] ?? 0;
        if (typeof current !== 'number') throw new StoreError(`Cannot increment non-number at ${op.path}`);
        parent[key] = current + op.value;
        return;
      }
      case 'append': {
        const list = getPath(parent, key);
        if (!Array.isArray(list)) throw new StoreError(`No array at ${op.path}`);
        list.push(op.value);
        return;
      }
    }
  });
}

function strip<T extends Doc>(doc: T): T {
  const clean: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(doc)) if (!k.startsWith('_')) clean[k] = v;
  return clean as T;
}

const parse = <T extends Doc>(row: Row): Stored<T> => ({ ...(JSON.parse(row.body) as T), _etag: row.etag });

const encodeContinuation = (offset: number) => Buffer.from(JSON.stringify({ o: offset })).toString('base64url');

function decodeContinuation(token: string | undefined): number {
  if (token === undefined) return 0;
  try {
    const o = (JSON.parse(Buffer.from(token, 'base64url').toString()) as { o?: unknown }).o;
    if (typeof o === 'number' && Number.isInteger(o) && o >= 0) return o;
  } catch {
    // fall through to the error below
  }
  throw new StoreError('Invalid continuation token');
}
