// Paged lists: `?top=N` (default 100, at most 1000) and `?continuationToken=`; the body stays
// the list's JSON array and `x-continuation-token` says that more follow. A token is opaque and
// tamper-evident (HMAC-SHA256 under the service's paging key) and bound to the caller and the list: one
// user's token is refused on another user's call or on another list. Inside is the store's own
// continuation, plus how many items of that store page were already handed out, for lists that drop what
// the caller may not see.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { ownerKey, type Principal } from '../auth/principal.js';
import type { Page } from '../store/types.js';
import { validationError } from '../errors.js';
import type { ResponseDoc } from './types.js';
import { json, type JsonReply } from './types.js';

export const DEFAULT_TOP = 100;
export const MAX_TOP = 1000;
export const CONTINUATION_HEADER = 'x-continuation-token';

const topMessage = `top must be an integer from 1 to ${MAX_TOP}`;

export const PageQuery = z.object({
  top: z.coerce
    .number({ error: topMessage })
    .int(topMessage)
    .min(1, topMessage)
    .max(MAX_TOP, topMessage)
    .optional()
    .describe(`Items per page (default ${DEFAULT_TOP}, at most ${MAX_TOP})`),
  continuationToken: z.string().max(8192).optional().describe('The x-continuation-token header of the previous page'),
});
export type PageQuery = z.output<typeof PageQuery>;

/** Where the next page starts: the store continuation of a page, the items of it already given, its size. */
const Cursor = z.object({ c: z.string().optional(), s: z.number(), n: z.number() });
type Cursor = z.output<typeof Cursor>;

const invalidToken = () =>
  validationError([{ field: 'continuationToken', message: 'continuationToken is not valid for this list' }]);

/** The caller and the list a token belongs to. */
const bindingOf = (principal: Principal, list: string) =>
  `${principal.kind}\n${principal.id}\n${ownerKey(principal.upn)}\n${list}`;

/** Reads one page of the store from a continuation, at most `limit` items. */
type Fetch<T> = (continuation: string | undefined, limit: number) => Promise<Page<T>>;

/** A list to page: its name (with everything that selects its items), the caller's query, and how to read it. */
export interface Listing<T> {
  list: string;
  query: PageQuery;
  fetch: Fetch<T>;
}

export interface PageResult<R> {
  items: R[];
  token?: string;
}

export class Pager {
  constructor(private readonly key: () => Promise<Buffer>) {}

  /**
   * One page of a list. `list` names the list and everything that selects its items (its path parameters
   * and filters); `fetch` reads the store from a continuation; `keep` maps each item, or drops it
   * (undefined): a list that drops items reads the store `MAX_TOP` at a time, so that a caller who may see
   * few of many items costs few queries.
   */
  async page<T>(principal: Principal, listing: Listing<T>): Promise<PageResult<T>>;
  async page<T, R>(
    principal: Principal,
    listing: Listing<T> & { keep: (item: T) => R | undefined | Promise<R | undefined> },
  ): Promise<PageResult<R>>;
  async page<T, R>(
    principal: Principal,
    { list, query, fetch, keep }: Listing<T> & { keep?: (item: T) => R | undefined | Promise<R | undefined> },
  ): Promise<PageResult<T | R>> {
    const top = query.top ?? DEFAULT_TOP;
    const batch = keep ? MAX_TOP : top;
    const map = keep ?? ((item: T) => item);
    const binding = bindingOf(principal, list);
    let cursor: Cursor =
      query.continuationToken !== undefined ? await this.open(query.continuationToken, binding) : { s: 0, n: batch };
    const items: (T | R)[] = [];
    for (;;) {
      const page = await fetch(cursor.c, cursor.n);
      for (const [i, item] of page.items.entries()) {
        if (i < cursor.s) continue;
        const kept = await map(item);
        if (kept === undefined) continue;
        items.push(kept);
        if (items.length < top) continue;
        const next: Cursor | undefined =
          i + 1 < page.items.length
            ? { ...cursor, s: i + 1 }
            : page.continuation !== undefined
              ? { c: page.continuation, s: 0, n: batch }
              : undefined;
        return next ? { items, token: await this.seal(next, binding) } : { items };
      }
      if (page.continuation === undefined) return { items };
      cursor = { c: page.continuation, s: 0, n: batch };
    }
  }

  private async mac(payload: string, binding: string): Promise<Buffer> {
    return createHmac('sha256', await this.key())
      .update(`${binding}\n${payload}`)
      .digest();
  }

  private async seal(cursor: Cursor, binding: string): Promise<string> {
    const payload = Buffer.from(JSON.stringify(cursor)).toString('base64url');
    return `${payload}.${(await this.mac(payload, binding)).toString('base64url')}`;
  }

  private async open(token: string, binding: string): Promise<Cursor> {
    const [payload, tag, extra] = token.split('.');
    if (!payload || !tag || extra !== undefined) throw invalidToken();
    const expected = await this.mac(payload, binding);
    const given = Buffer.from(tag, 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw invalidToken();
    const cursor = Cursor.safeParse(JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')));
    if (!cursor.success) throw invalidToken();
    return cursor.data;
  }
}

/** The list's JSON array (each item as `present` shows it), with the continuation header when more follow. */
export function pagedJson<R>(result: PageResult<R>): JsonReply<200, R[]>;
export function pagedJson<R, T>(result: PageResult<R>, present: (item: R) => T): JsonReply<200, T[]>;
export function pagedJson<R, T>(result: PageResult<R>, present?: (item: R) => T): JsonReply<200, (R | T)[]> {
  const headers = result.token !== undefined ? { [CONTINUATION_HEADER]: result.token } : undefined;
  return json(200, present ? result.items.map(present) : result.items, headers);
}

/** The OpenAPI description of a paged list's 200. */
export const pagedResponse = <S extends z.ZodType>(description: string, item: S) =>
  ({
    description,
    schema: z.array(item),
    headers: {
      [CONTINUATION_HEADER]: {
        description: 'Present when more items follow: pass it back as continuationToken',
        type: 'string',
      },
    },
  }) satisfies ResponseDoc;
