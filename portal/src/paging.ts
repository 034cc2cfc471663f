// Paged lists: `top` and `continuationToken` in the query, and `x-continuation-token` on an answer when more
// follow. A list is a call given the page's query, so its path and item type are the client's, from the document.

/** The query of one page, as every paged list of both APIs takes it. */
export interface PageQuery {
  top: number;
  continuationToken?: string;
}

type List<Item> = (query: PageQuery) => Promise<{ data?: Item[]; response: Response }>;

/** One page of a list; `next` is the continuation for the following page, if any. */
export async function page<Item>(
  list: List<Item>,
  continuation?: string,
  top = 20,
): Promise<{ items: Item[]; next: string | undefined }> {
  const { data, response } = await list({ top, ...(continuation ? { continuationToken: continuation } : {}) });
  return { items: data ?? [], next: response.headers.get('x-continuation-token') ?? undefined };
}

/** Every page of a list. */
export async function all<Item>(list: List<Item>): Promise<Item[]> {
  const items: Item[] = [];
  let next: string | undefined;
  do {
    const p = await page(list, next, 100);
    items.push(...p.items);
    next = p.next;
  } while (next);
  return items;
}
