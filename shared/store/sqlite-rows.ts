// Rows as SQLite answers them, read through checks: better-sqlite3 gives a row as unknown, and what it holds
// is what the statement selects, so each reader here checks the columns it reads instead of assuming them.
import { isObject } from './fields.js';
import { StoreError, type JsonScalar } from './types.js';

/** A document's row: its body as JSON text and its ETag. */
export interface DocRow {
  body: string;
  etag: string;
}

/** What a row is checked to be: a type guard over the columns the statement selects. */
export type RowCheck<R> = (row: unknown) => row is R;

export const isDocRow: RowCheck<DocRow> = (r): r is DocRow =>
  isObject(r) && typeof r.body === 'string' && typeof r.etag === 'string';

export const isEtagRow: RowCheck<Pick<DocRow, 'etag'>> = (r): r is Pick<DocRow, 'etag'> =>
  isObject(r) && typeof r.etag === 'string';

const isScalar = (v: unknown): v is JsonScalar =>
  v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';

/** An aggregate's row: a value per output column. */
export const isScalarRow: RowCheck<Record<string, JsonScalar>> = (r): r is Record<string, JsonScalar> =>
  isObject(r) && Object.values(r).every(isScalar);

const notOfShape = () => new StoreError('SQLite answered a row that is not of the shape its statement selects');

/** The row `get` answered, checked (undefined when there is none). */
export function rowOf<R>(row: unknown, is: RowCheck<R>): R | undefined {
  if (row === undefined) return undefined;
  if (!is(row)) throw notOfShape();
  return row;
}

/** The rows `all` answered, each checked. */
export function rowsOf<R>(rows: unknown[], is: RowCheck<R>): R[] {
  if (!rows.every(is)) throw notOfShape();
  return rows;
}
