// Microsoft Graph principal search, with the service's managed identity (used when GRAPH_ENABLED=true).
import type { DirectoryEntry } from './directory.js';

export interface GraphOptions {
  /** `https://graph.microsoft.com` in Azure. */
  baseUrl: string;
  /** An access token for `${baseUrl}/.default`. */
  getToken: () => Promise<string>;
  fetch?: typeof fetch;
}

interface GraphUser {
  id: string;
  displayName?: string | null;
  userPrincipalName?: string | null;
  mail?: string | null;
}
interface GraphGroup {
  id: string;
  displayName?: string | null;
}

/** Users and groups whose display name, UPN or mail starts with the term (Graph `$search`). */
export async function searchGraph(term: string, options: GraphOptions, top = 25): Promise<DirectoryEntry[]> {
  const call = options.fetch ?? fetch;
  const headers = { authorization: `Bearer ${await options.getToken()}`, consistencylevel: 'eventual' };
  const quoted = term.replace(/"/g, '');
  const get = async <T>(path: string): Promise<T[]> => {
    const res = await call(`${options.baseUrl}${path}`, { headers, signal: AbortSignal.timeout(10_000) });
    if (!res.ok) throw new Error(`Microsoft Graph answered ${res.status} for ${path.split('?')[0] ?? path}`);
    return ((await res.json()) as { value: T[] }).value;
  };
  const search = encodeURIComponent(`"displayName:${quoted}" OR "userPrincipalName:${quoted}" OR "mail:${quoted}"`);
  const [users, groups] = await Promise.all([
    get<GraphUser>(`/v1.0/users?$search=${search}&$select=id,displayName,userPrincipalName,mail&$top=${top}`),
    get<GraphGroup>(
      `/v1.0/groups?$search=${encodeURIComponent(`"displayName:${quoted}"`)}&$select=id,displayName&$top=${top}`,
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
    `${options.baseUrl}/v1.0/users/${encodeURIComponent(userId)}/transitiveMemberOf/microsoft.graph.group?$select=id&$top=999`;
  for (let page = 0; next && page < MAX_GROUP_PAGES; page++) {
    const res = await call(next, { headers, signal: AbortSignal.timeout(10_000) });
    if (!res.ok) throw new Error(`Microsoft Graph answered ${res.status} for a user's groups`);
    const body = (await res.json()) as { value?: { id?: unknown }[]; '@odata.nextLink'?: unknown };
    for (const g of body.value ?? []) if (typeof g.id === 'string') groups.push(g.id);
    const link = body['@odata.nextLink'];
    // Only Graph's own pages are followed: a link elsewhere would carry the token away.
    next = typeof link === 'string' && link.startsWith(`${options.baseUrl}/`) ? link : undefined;
  }
  return groups;
}
