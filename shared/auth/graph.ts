// Microsoft Graph principal search, with the service's managed identity (used when GRAPH_ENABLED=true).
import { z } from 'zod';
import type { DirectoryEntry } from './directory.js';

export interface GraphOptions {
  /** `https://graph.microsoft.com` in Azure. */
  baseUrl: string;
  /** An access token for `${baseUrl}/.default`. */
  getToken: () => Promise<string>;
  fetch?: typeof fetch;
}

const GraphUser = z.object({
  id: z.string(),
  displayName: z.string().nullish(),
  userPrincipalName: z.string().nullish(),
  mail: z.string().nullish(),
});
const GraphGroup = z.object({ id: z.string(), displayName: z.string().nullish() });

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Users and groups whose display name, UPN or mail starts with the term (Graph `$search`). */
export async function searchGraph(term: string, options: GraphOptions, top = 25): Promise<DirectoryEntry[]> {
  const call = options.fetch ?? fetch;
  const headers = { authorization: `Bearer ${await options.getToken()}`, consistencylevel: 'eventual' };
  const quoted = term.replace(/"/g, '');
  const get = async <T>(path: string, item: z.ZodType<T>): Promise<T[]> => {
    const res = await call(`${options.baseUrl}${path}`, { headers, signal: AbortSignal.timeout(10_000) });
    if (!res.ok) throw new Error(`Microsoft Graph answered ${res.status} for ${path.split('?')[0] ?? path}`);
    return z.object({ value: z.array(item) }).parse(await res.json()).value;
  };
  const search = encodeURIComponent(`"displayName:${quoted}" OR "userPrincipalName:${quoted}" OR "mail:${quoted}"`);
  const [users, groups] = await Promise.all([
    get(`/v1.0/users?$search=${search}&$select=id,displayName,userPrincipalName,mail&$top=${top}`, GraphUser),
    get(
      `/v1.0/groups?$search=${encodeURIComponent(`"displayName:${quoted}"`)}&$select=id,displayName&$top=${top}`,
      GraphGroup,
    ),
  ]);
  return [
    ...users.map((u) => ({
      id: u.id,
      principal_type: 'User' as const,
      upn: u.userPrincipalName ?? null,
      display_name: u.displayName ?? null,
      email: u.mail ?? null,
    })),
    ...groups.map((g) => ({
      id: g.id,
      principal_type: 'Group' as const,
      upn: null,
      display_name: g.displayName ?? null,
      email: null,
    })),
  ];
}

/** Most groups read for one user: 50 pages of 999 (a directory with more is refused rather than read forever). */
const MAX_GROUP_PAGES = 50;

/**
 * Every group a user is a member of, directly or through other groups (Graph `transitiveMemberOf`): for users
 * whose token names too many groups to carry them (the groups overage claim).
 */
export async function transitiveGroups(userId: string, options: GraphOptions): Promise<string[]> {
  const call = options.fetch ?? fetch;
  const headers = { authorization: `Bearer ${await options.getToken()}` };
  const groups: string[] = [];
  let next: string | undefined =
    `${options.baseUrl}/v1.0/users/${encodeURIComponent(userId)}` +
    '/transitiveMemberOf/microsoft.graph.group?$select=id&$top=999';
  for (let page = 0; next && page < MAX_GROUP_PAGES; page++) {
    const res = await call(next, { headers, signal: AbortSignal.timeout(10_000) });
    if (!res.ok) throw new Error(`Microsoft Graph answered ${res.status} for a user's groups`);
    const body: unknown = await res.json();
    const found: unknown = isRecord(body) ? body.value : undefined;
    for (const g of Array.isArray(found) ? found : []) if (isRecord(g) && typeof g.id === 'string') groups.push(g.id);
    const link = isRecord(body) ? body['@odata.nextLink'] : undefined;
    // Only Graph's own pages are followed: a link elsewhere would carry the token away.
    next = typeof link === 'string' && link.startsWith(`${options.baseUrl}/`) ? link : undefined;
  }
  return groups;
}
