// Paging of the embedded store's queries: a continuation token is the offset of the next page, and a page
// reads one row past its limit, which tells whether another page follows.
import { isObject } from './fields.js';
import { StoreError, type Page, type Query } from './types.js';

/** Where a page starts, its limit (-1: none), and how many rows to read for it. */
export interface PageWindow {
  offset: number;
  limit: number;
  rows: number;
}

/** The window of a query's page; StoreError for a token this store did not give. */
export function pageWindow(q: Pick<Query, 'limit' | 'continuation'>): PageWindow {
  const offset = decodeContinuation(q.continuation);
  const limit = q.limit ?? -1;
  // One extra row tells whether another page follows.
  return { offset, limit, rows: limit < 0 ? -1 : limit + 1 };
}

/** The page of the rows read for a window: its items, and where the next page starts if there is one. */
export function pageOf<R, T>(rows: readonly R[], window: PageWindow, item: (row: R) => T): Page<T> {
  const { offset, limit } = window;
  const more = limit >= 0 && rows.length > limit;
  const items = (more ? rows.slice(0, limit) : rows).map(item);
  return more ? { items, continuation: encodeContinuation(offset + limit) } : { items };
}

const encodeContinuation = (offset: number) => Buffer.from(JSON.stringify({ o: offset })).toString('base64url');

function decodeContinuation(token: string | undefined): number {
  if (token === undefined) return 0;
  try {
    const parsed: unknown = JSON.parse(Buffer.from(token, 'base64url').toString());
    const o = isObject(parsed) ? parsed.o : undefined;
    if (typeof o === 'number' && Number.isInteger(o) && o >= 0) return o;
  } catch {
    // fall through to the error below
  }
  throw new StoreError('Invalid continuation token');
}
