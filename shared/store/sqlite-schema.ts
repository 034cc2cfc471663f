// The embedded store's schema: what the file holds (read once when the store opens) and each container's
// tables: its documents, the expression indexes of its definition, and the facts table of its aggregate
// fields. Tables and indexes written by earlier releases are rebuilt or dropped here, so the rest of the
// store sees one layout. The expression a field is read with lives here too: a query uses an index only
// where it reads the field exactly as the index was built.
import type Database from 'better-sqlite3';
import { indexFields, type ContainerDefinition } from './containers.js';
import { isObject, segments } from './fields.js';
import { rowsOf } from './sqlite-rows.js';
import { StoreError } from './types.js';

/** The file's tables (their CREATE statements) and each table's indexes, as the store opened it. */
export interface Schema {
  tables: Map<string, string>;
  indexes: Map<string, string[]>;
}

/** The facts table of a container's aggregate fields: field path to its column, and the row writer. */
export interface FactsTable {
  table: string;
  columns: Map<string, string>;
  insert: string;
}

/** The tables a container reads and writes: its documents', and its facts table if it has aggregate fields. */
export interface ContainerTables {
  table: string;
  facts: FactsTable | undefined;
}

/** What creating a container's tables works on. */
interface TableContext {
  db: Database.Database;
  def: ContainerDefinition;
  schema: Schema;
  /** The documents' table. */
  table: string;
}

export const jsonExpr = (field: string) => `json_extract(body, '$.${segments(field).join('.')}')`;

export const TYPE_NAME = /^\w+$/;
/**
 * `type` equal to a type name, the name written as a literal: SQLite answers a query from a partial index of
 * that type only where the query's terms say as much, and it cannot tell what a bound parameter will hold.
 */
export const typeIs = (type: string, field = jsonExpr('type')) => `${field} = ${typeLiteral(type)}`;

/** A type name as an SQL literal; only a plain name may be written into SQL. */
export function typeLiteral(type: string): string {
  if (!TYPE_NAME.test(type)) throw new StoreError(`Not a type name: ${type}`);
  return `'${type}'`;
}

/** A table or index as sqlite_master lists it. */
interface SchemaRow {
  type: string;
  name: string;
  tableName: string;
  sql: string | null;
}

const isSchemaRow = (r: unknown): r is SchemaRow =>
  isObject(r) &&
  typeof r.type === 'string' &&
  typeof r.name === 'string' &&
  typeof r.tableName === 'string' &&
  (r.sql === null || typeof r.sql === 'string');

const isNameRow = (r: unknown): r is { name: string } => isObject(r) && typeof r.name === 'string';

export function readSchema(db: Database.Database): Schema {
  const rows = rowsOf(
    db
      .prepare(`SELECT type, name, tbl_name AS tableName, sql FROM sqlite_master WHERE type IN ('table', 'index')`)
      .all(),
    isSchemaRow,
  );
  const schema: Schema = { tables: new Map(), indexes: new Map() };
  for (const r of rows) {
    if (r.type === 'table') schema.tables.set(r.name, r.sql ?? '');
    else schema.indexes.set(r.tableName, [...(schema.indexes.get(r.tableName) ?? []), r.name]);
  }
  return schema;
}

/** Whether the table exists as a WITHOUT ROWID table (as releases before rowid tables wrote them). */
const withoutRowid = (schema: Schema, table: string) => /WITHOUT\s+ROWID\s*$/i.test(schema.tables.get(table) ?? '');

/** Creates a container's tables and indexes where missing, and brings those of earlier releases up to date. */
export function openTables(db: Database.Database, def: ContainerDefinition, schema: Schema): ContainerTables {
  const context: TableContext = { db, def, schema, table: `docs_${def.name}` };
  createTable(context);
  createIndexes(context);
  return { table: context.table, facts: def.aggregateFields ? createFacts(context, def.aggregateFields) : undefined };
}

/**
 * The documents' table. Rows are kept in the order written (a rowid table), the key (pk, id) a unique index
 * beside them: a new document is appended, where a table ordered by its random ids (WITHOUT ROWID, as
 * earlier releases wrote it, rebuilt here) dirtied a page somewhere in the middle for each.
 */
function createTable({ db, schema, table }: TableContext): void {
  const columns =
    'pk TEXT NOT NULL, id TEXT NOT NULL, etag TEXT NOT NULL, expires_at INTEGER, body TEXT NOT NULL, PRIMARY ' +
    'KEY (pk, id)';
  if (!schema.tables.has(table)) return void db.exec(`CREATE TABLE IF NOT EXISTS "${table}" (${columns})`);
  if (!withoutRowid(schema, table)) return;
  const next = `${table}_next`;
  const copied = 'pk, id, etag, expires_at, body';
  db.transaction(() => {
    db.exec(`DROP TABLE IF EXISTS "${next}"`);
    db.exec(`CREATE TABLE "${next}" (${columns})`);
    db.exec(`INSERT INTO "${next}" (${copied}) SELECT ${copied} FROM "${table}" ORDER BY pk, id`);
    db.exec(`DROP TABLE "${table}"`);
    db.exec(`ALTER TABLE "${next}" RENAME TO "${table}"`);
  }).immediate();
  // Its indexes went with the table.
  schema.indexes.delete(table);
}

/**
 * The indexes of the definition, an index of one type partial (only that type's documents have entries).
 * An index of this table that the definition no longer names (one of an earlier release) is dropped.
 */
function createIndexes({ db, def, schema, table }: TableContext): void {
  const wanted = new Map(
    def.indexes.map((index, i) => {
      const type = 'type' in index ? index.type : undefined;
      const name = type ? `ix_${def.name}_${i}_${type}` : `ix_${def.name}_${i}`;
      const where = type ? ` WHERE ${typeIs(type)}` : '';
      const fields = indexFields(index).map(jsonExpr).join(', ');
      return [name, `CREATE INDEX IF NOT EXISTS "${name}" ON "${table}" (${fields})${where}`];
    }),
  );
  const existing = schema.indexes.get(table) ?? [];
  for (const name of existing) if (name.startsWith('ix_') && !wanted.has(name)) db.exec(`DROP INDEX "${name}"`);
  for (const [name, sql] of wanted) if (!existing.includes(name)) db.exec(sql);
}

/**
 * Creates the facts table and its covering index; fills it from the documents when it is new. Its columns
 * are named after the fields, so a file written with other aggregate fields has its table rebuilt.
 */
function createFacts({ db, def, schema, table: documents }: TableContext, fields: readonly string[]): FactsTable {
  const table = `facts_${def.name}`;
  const columns = new Map(fields.map((f) => [f, `"f:${f.replace(/"/g, '')}"`]));
  const names = [...columns.values()];
  const existing = rowsOf(db.prepare(`SELECT name FROM pragma_table_info(?)`).all(table), isNameRow).map(
    (c) => `"${c.name}"`,
  );
  const wanted = ['"pk"', '"id"', '"expires_at"', ...names];
  const isNew =
    existing.length !== wanted.length || existing.some((c, i) => c !== wanted[i]) || withoutRowid(schema, table);
  const index = `ix_${table}`;
  const createIndex = () =>
    db.exec(`CREATE INDEX IF NOT EXISTS "${index}" ON "${table}" (${names.join(', ')}, expires_at)`);
  if (!isNew) {
    if (!schema.indexes.get(table)?.includes(index)) createIndex();
  } else {
    // Rebuilt and filled in one transaction: a start cut short leaves the old table, not a partly filled one.
    const types = def.aggregateTypes
      ? ` WHERE ${jsonExpr('type')} IN (${def.aggregateTypes.map(typeLiteral).join(', ')})`
      : '';
    const factColumns = `pk TEXT NOT NULL, id TEXT NOT NULL, expires_at INTEGER, ${names.join(', ')}`;
    db.transaction(() => {
      db.exec(`DROP TABLE IF EXISTS "${table}"`);
      db.exec(`CREATE TABLE "${table}" (${factColumns}, PRIMARY KEY (pk, id))`);
      createIndex();
      const values = fields.map(jsonExpr).join(', ');
      db.exec(`INSERT INTO "${table}" SELECT pk, id, expires_at, ${values} FROM "${documents}"${types}`);
    }).immediate();
  }
  const insert =
    `INSERT OR REPLACE INTO "${table}" (pk, id, expires_at, ${names.join(', ')}) VALUES (?, ?, ` +
    `?${', ?'.repeat(names.length)})`;
  return { table, columns, insert };
}
