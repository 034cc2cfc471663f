// One container of the embedded store: its documents' reads and writes (ETags, expiry, batches, the facts
// row written with each document) and the running of its queries and aggregates. Reads run on the store's
// connection; writes go through the group commit; aggregates run on the reader threads when there are any.
import { randomBytes } from 'node:crypto';
import type Database from 'better-sqlite3';
import type { ContainerDefinition } from './containers.js';
import { getPath } from './fields.js';
import type { GroupCommit } from './sqlite-group-commit.js';
import { pageOf, pageWindow } from './sqlite-paging.js';
import { applyPatch } from './sqlite-patch.js';
import { aggregateSql, bind, selectSql, type Bind, type QueryTarget } from './sqlite-query.js';
import type { ReaderPool } from './sqlite-readers.js';
import { isDocRow, isEtagRow, isScalarRow, rowOf, rowsOf, type DocRow } from './sqlite-rows.js';
import { openTables, type FactsTable, type Schema } from './sqlite-schema.js';
import {
  ConflictError,
  errorCode,
  NotFoundError,
  PreconditionFailedError,
  StoreError,
  type AggregateQuery,
  type AggregateRow,
  inBatch,
  type BatchOperation,
  type Container,
  type Doc,
  type Page,
  type PatchOp,
  type Query,
  type Stored,
  type WriteOptions,
} from './types.js';

/** How many updated documents a container keeps its last written version of. */
const WRITTEN_KEPT = 256;
const writtenKey = (pk: string, id: string) => `${pk}\u0000${id}`;

// ETags: a random prefix per process and a counter, unique across processes sharing the file without a
// call for random bytes on every write.
const etagPrefix = randomBytes(8).toString('hex');
let etagCounter = 0;
const newEtag = () => `"${etagPrefix}-${(etagCounter++).toString(36)}"`;
/** A document field as json_extract returns it: scalars as they are, objects and arrays as JSON text. */
const extracted = (v: unknown): Bind =>
  typeof v === 'object' && v !== null
    ? JSON.stringify(v)
    : typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean'
      ? bind(v)
      : null;
const sameValues = (a: readonly Bind[], b: readonly Bind[]) => a.length === b.length && a.every((v, i) => v === b[i]);

export interface SqliteContainerOptions {
  db: Database.Database;
  def: ContainerDefinition;
  commits: GroupCommit;
  /** The file's schema as the store opened it: the container creates or upgrades its tables from it. */
  schema: Schema;
  /** The read-only connections aggregates run on, started on first use; none: this connection. */
  readers?: () => ReaderPool | undefined;
}

export class SqliteContainer<T extends Doc> implements Container<T> {
  private readonly db: Database.Database;
  private readonly def: ContainerDefinition;
  private readonly commits: GroupCommit;
  private readonly readers: () => ReaderPool | undefined;
  private readonly table: string;
  /** Whether documents can expire: only then do reads filter on expires_at. */
  private readonly ttl: boolean;
  /** The facts table of the aggregate fields, if any: field path to its column, and the row writer. */
  private readonly facts: FactsTable | undefined;
  /** What the SQL of queries and aggregates is built over. */
  private readonly target: QueryTarget;
  private readonly statements = new Map<string, Database.Statement>();
  /** The versions this container last wrote of the documents it updated, by writtenKey (see current()). */
  private readonly written = new Map<string, Stored<T>>();

  constructor({ db, def, commits, schema, readers = () => undefined }: SqliteContainerOptions) {
    this.db = db;
    this.def = def;
    this.commits = commits;
    this.readers = readers;
    const tables = openTables(db, def, schema);
    this.table = tables.table;
    this.facts = tables.facts;
    this.ttl = def.defaultTtlSeconds !== undefined;
    this.target = { ...tables, ttl: this.ttl };
    if (def.defaultTtlSeconds !== undefined) {
      for (const table of [this.table, this.facts?.table]) {
        if (table)
          db.prepare(`DELETE FROM "${table}" WHERE expires_at IS NOT NULL AND expires_at <= ?`).run(Date.now());
      }
    }
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

  private readRow(pk: string, id: string): DocRow | undefined {
    return rowOf(this.liveRow('body, etag', pk, id), isDocRow);
  }

  /** A row's ETag alone: what a delete or a known version needs, without the body. */
  private readEtag(pk: string, id: string): Pick<DocRow, 'etag'> | undefined {
    return rowOf(this.liveRow('etag', pk, id), isEtagRow);
  }

  /** `columns` of the row (pk, id), unless it has expired. */
  private liveRow(columns: string, pk: string, id: string): unknown {
    const sql = `SELECT ${columns} FROM "${this.table}" WHERE pk = ? AND id = ?`;
    if (!this.ttl) return this.stmt(sql).get(pk, id);
    return this.stmt(`${sql} AND (expires_at IS NULL OR expires_at > ?)`).get(pk, id, Date.now());
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
    const oldest = this.written.keys().next();
    if (this.written.size > WRITTEN_KEPT && !oldest.done) this.written.delete(oldest.value);
  }

  private expiresAt(doc: T): number | null {
    const ttl = doc.ttl ?? this.def.defaultTtlSeconds;
    return ttl !== undefined && ttl > 0 ? Date.now() + ttl * 1000 : null;
  }

  private write(doc: T, sqlVerb: 'INSERT' | 'INSERT OR REPLACE'): Stored<T> {
    const clean = strip(doc);
    const etag = newEtag();
    const expiresAt = this.expiresAt(clean);
    this.stmt(`${sqlVerb} INTO "${this.table}" (pk, id, etag, expires_at, body) VALUES (?, ?, ?, ?, ?)`).run(
      clean.pk,
      clean.id,
      etag,
      expiresAt,
      JSON.stringify(clean),
    );
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
    const unchanged =
      replaced &&
      getPath(replaced, 'type') === type &&
      expiresAt === null &&
      this.expiresAt(replaced) === null &&
      sameValues(values, this.factsOf(replaced));
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
      if (errorCode(e) === 'SQLITE_CONSTRAINT_PRIMARYKEY') throw conflict();
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
      const doc = storedBody<T & Record<string, unknown>>(row.body);
      for (const op of ops) applyPatch(doc, op);
      return this.write(doc, 'INSERT OR REPLACE');
    });
  }

  query(q: Query): Promise<Page<Stored<T>>> {
    return this.run(() => this.querySync(q));
  }

  private querySync(q: Query): Page<Stored<T>> {
    const { sql, params } = selectSql(this.target, q);
    const window = pageWindow(q);
    const rows = rowsOf(this.stmt(sql).all(...params, window.rows, window.offset), isDocRow);
    return pageOf(rows, window, (r) => parse<T>(r));
  }

  async aggregate(q: AggregateQuery): Promise<AggregateRow[]> {
    const { sql, params, shape } = aggregateSql(this.target, q);
    const pool = this.readers();
    const rows = pool ? await pool.run(sql, params) : await this.run(() => this.stmt(sql).all(...params));
    return rowsOf(rows, isScalarRow).map(shape);
  }

  private check(row: Pick<DocRow, 'etag'> | undefined, ifMatch: string | undefined, id: string) {
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

/**
 * A document without the store's own fields (`_etag`), as it is written. The cast is the one way to say that
 * a copy of a T without its `_` fields is still a T (a document type's fields never start with `_`): a copy
 * made by spreading and deleting would say it without one, but costs more on every write (measured).
 */
function strip<T extends Doc>(doc: T): T {
  const clean: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(doc)) if (!k.startsWith('_')) clean[k] = v;
  return clean as T;
}

/**
 * A stored body as the document it is. The cast cannot be a check: the body is what this container wrote
 * from a T, and T is known only by the container's name (StoredDocs), not by anything a row holds.
 */
const storedBody = <D>(body: string): D => JSON.parse(body) as D;

const parse = <T extends Doc>(row: DocRow): Stored<T> => ({ ...storedBody<T>(row.body), _etag: row.etag });
