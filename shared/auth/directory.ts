// Principals for identity search: those seen signing in and those named in role assignments, or
// Microsoft Graph when it is configured.
import type { Container, Doc, DocsOf } from '../store/types.js';
import { searchGraph, transitiveGroups, type GraphOptions } from './graph.js';
import type { Principal } from './principal.js';
import { ROLE_ASSIGNMENTS_PK, type RoleAssignmentDoc } from '../providers/types/authorization.js';

/** One result of a principal search (the response shape of `identity/securityPrincipals`). */
export interface DirectoryEntry {
  id: string;
  principal_type: 'User' | 'Group' | 'ServicePrincipal';
  upn: string | null;
  display_name: string | null;
  email: string | null;
}

interface PrincipalDoc extends Doc {
  principal_type: 'User';
  upn: string;
  display_name: string | null;
  last_seen: string;
  /** Lower-cased id, UPN and name: what search matches. */
  search_text: string;
}

declare module '../store/types.js' {
  interface StoredDocs {
    'principals/principal': PrincipalDoc;
  }
}

/** Whether a document of the principals container is a principal seen signing in (its own partition). */
export const isPrincipal = (doc: DocsOf<'principals'>): doc is PrincipalDoc => doc.pk === PK;

const PK = 'principals';
const REMEMBER_MS = 10 * 60_000;
/** How long a user's groups read from Graph are used before they are read again. */
const GROUPS_TTL_MS = 5 * 60_000;

export class PrincipalDirectory {
  // Principals recorded recently by this instance: at most one write per principal per ten minutes.
  private readonly recent = new Map<string, number>();
  // Groups read from Graph for users with a groups overage, per user id, for GROUPS_TTL_MS.
  private readonly memberships = new Map<string, { groups: Promise<readonly string[]>; until: number }>();

  private readonly graph: GraphOptions | undefined;
  private readonly onError: (e: unknown) => void;

  /** `graph` searches and reads group memberships in Entra ID; `onError` hears of writes and lookups that failed. */
  constructor(
    private readonly principals: Container<PrincipalDoc>,
    private readonly resources: Container<RoleAssignmentDoc>,
    options: { graph?: GraphOptions | undefined; onError?: (e: unknown) => void } = {},
  ) {
    this.graph = options.graph;
    this.onError = options.onError ?? (() => undefined);
  }

  /**
   * The groups a caller reads knowledge as: the token's, or for a token with a groups overage the user's
   * transitive memberships from Graph (cached a few minutes). Without Graph such a caller has no groups, and
   * reads what is for everyone: a missing list never widens access. So does one whose lookup fails.
   */
  readerGroups(p: Principal): Promise<readonly string[]> {
    if (!p.groupsOverage) return Promise.resolve(p.groups);
    if (!this.graph) {
      this.onError(
        new Error('A token has a groups overage and GRAPH_ENABLED is off: knowledge for groups is not found for it'),
      );
      return Promise.resolve(p.groups);
    }
    const known = this.memberships.get(p.id);
    if (known && known.until > Date.now()) return known.groups;
    const groups = transitiveGroups(p.id, this.graph).then(
      (g) => [...new Set([...p.groups, ...g])],
      // Graph failing: this call reads what is for everyone (and the next one asks Graph again).
      (e: unknown) => {
        this.memberships.delete(p.id);
        this.onError(e);
        return p.groups;
      },
    );
    if (this.memberships.size > 50_000) this.memberships.clear();
    this.memberships.set(p.id, { groups, until: Date.now() + GROUPS_TTL_MS });
    return groups;
  }

  /** Records a signed-in user, off the request's path. */
  seen(p: Principal): void {
    if (p.kind !== 'user') return;
    const last = this.recent.get(p.id);
    if (last !== undefined && Date.now() - last < REMEMBER_MS) return;
    if (this.recent.size > 50_000) this.recent.clear();
    this.recent.set(p.id, Date.now());
    this.principals
      .upsert({
        id: p.id,
        pk: PK,
        principal_type: 'User',
        upn: p.upn,
        display_name: p.name,
        last_seen: new Date().toISOString(),
        search_text: [p.id, p.upn, p.name ?? ''].join(' ').toLowerCase(),
      })
      .catch(this.onError);
  }

  async search(term: string, limit = 25): Promise<DirectoryEntry[]> {
    if (this.graph) return (await searchGraph(term, this.graph, limit)).slice(0, limit);
    const needle = term.toLowerCase();
    const { items } = await this.principals.query({
      partition: PK,
      where: [{ field: 'search_text', op: 'includes', value: needle }],
      orderBy: [{ field: 'upn' }],
      limit,
    });
    const found: DirectoryEntry[] = items.map((d) => ({
      id: d.id,
      principal_type: d.principal_type,
      upn: d.upn,
      display_name: d.display_name,
      email: null,
    }));
    if (found.length < limit) {
      // Principals named in role assignments but never seen (groups, service principals): matched by id.
      const known = new Set(found.map((f) => f.id.toLowerCase()));
      const { items: assignments } = await this.resources.query({
        partition: ROLE_ASSIGNMENTS_PK,
        where: [{ field: 'deleted', op: 'ne', value: true }],
      });
      for (const a of assignments) {
        const id = a.principal_id.toLowerCase();
        if (known.has(id) || !id.includes(needle)) continue;
        known.add(id);
        found.push({
          id: a.principal_id,
          principal_type: a.principal_type,
          upn: null,
          display_name: null,
          email: null,
        });
        if (found.length >= limit) break;
      }
    }
    return found;
  }
}
