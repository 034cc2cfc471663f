// Typed reads of what better-sqlite3 answers for the embedded vector index: its rows are `unknown` to the
// compiler, so each read checks the columns it expects. A row of another shape is a bug in the index's SQL
// (or a file written by something else), thrown as a TypeError, never read as the wrong type.

/** What a column holds as better-sqlite3 reads it (integers as numbers: the index uses no safe-integer mode). */
interface ColumnTypes {
  text: string;
  integer: number;
  blob: Buffer;
}
export type Column = keyof ColumnTypes;

/** A row's columns by name, as the shape names them. */
export type RowOf<S extends Readonly<Record<string, Column>>> = { -readonly [K in keyof S]: ColumnTypes[S[K]] };
/** A raw row's columns by position (`.raw()` statements). */
export type TupleOf<S extends readonly Column[]> = {
  -readonly [K in keyof S]: S[K] extends Column ? ColumnTypes[S[K]] : never;
};

function holds<C extends Column>(column: C, value: unknown): value is ColumnTypes[C] {
  return column === 'blob' ? Buffer.isBuffer(value) : typeof value === (column === 'text' ? 'string' : 'number');
}

const mismatch = (shape: unknown) => new TypeError(`an index row is not of the shape ${JSON.stringify(shape)}`);

function isRow<S extends Readonly<Record<string, Column>>>(shape: S, row: unknown): row is RowOf<S> {
  if (typeof row !== 'object' || row === null) return false;
  return Object.entries(shape).every(([name, column]) => holds(column, Reflect.get(row, name)));
}

function isTuple<S extends readonly Column[]>(shape: S, row: unknown): row is TupleOf<S> {
  return Array.isArray(row) && shape.every((column, i) => holds(column, row[i]));
}

/** The rows of a statement (`.all()`), each checked against the shape. */
export function rowsOf<S extends Readonly<Record<string, Column>>>(shape: S, rows: readonly unknown[]): RowOf<S>[] {
  return rows.map((row) => {
    if (!isRow(shape, row)) throw mismatch(shape);
    return row;
  });
}

/** One raw row (`.raw()`), checked against its columns in order. */
export function tupleOf<S extends readonly Column[]>(shape: S, row: unknown): TupleOf<S> {
  if (!isTuple(shape, row)) throw mismatch(shape);
  return row;
}

/** One value (`.pluck().get()`, a simple pragma), checked against its column. */
export function columnValue<C extends Column>(column: C, value: unknown): ColumnTypes[C] {
  if (!holds(column, value)) throw mismatch(column);
  return value;
}

/** The values of a one-column statement (`.pluck().all()`), each checked against the column. */
export const columnValues = <C extends Column>(column: C, values: readonly unknown[]): ColumnTypes[C][] =>
  values.map((value) => columnValue(column, value));
