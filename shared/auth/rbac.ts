// Role-based authorization over the stored role assignments. Assignments are read with one query and
// cached across requests; a write here invalidates the cache at once, other instances refresh within 15 s.
import { forbidden } from '../errors.js';
import { ROLE_ASSIGNMENTS_PK, type RoleAssignmentDoc } from '../providers/types/authorization.js';
import type { Container } from '../store/types.js';
import type { Access, Authorizer } from './authorizer.js';
import type { Principal } from './principal.js';
import { roleGrants, ROLES_BY_ID, type RoleDefinition } from '../providers/types/roles.js';

interface Assignment {
  principal: string;
  scope: string;
  role: RoleDefinition;
}

/**
 * Makes a scope absolute: `providers/...` (as agent scopes are usually written) is relative to the instance.
 * Trailing slashes are dropped; comparison is case-insensitive.
 */
export function normalizeScope(scope: string, instanceId: string): string {
  const trimmed = scope.trim().replace(/\/+$/, '');
  if (trimmed === '') return '/';
  if (/^\/?providers\//i.test(trimmed)) return `/instances/${instanceId}/${trimmed.replace(/^\//, '')}`;
  return trimmed.startsWith('/') ? trimmed : `/${trimmed}`;
}

const covers = (assigned: string, resource: string) =>
  assigned === '/' || resource === assigned || resource.startsWith(`${assigned}/`);

export class RoleBasedAuthorizer implements Authorizer {
  private cache: { assignments: Assignment[]; expires: number } | undefined;
  private loading: Promise<Assignment[]> | undefined;
  private generation = 0;

  constructor(
    private readonly container: Container<RoleAssignmentDoc>,
    private readonly instanceId: string,
    private readonly ttlMs = 15_000,
  ) {}

  invalidate(): void {
    this.cache = undefined;
    this.loading = undefined;
    this.generation++;
  }

  /** Every live assignment, from the cache when fresh; concurrent callers share one load. */
  private async assignments(): Promise<Assignment[]> {
    if (this.cache && this.cache.expires > Date.now()) return this.cache.assignments;
    if (!this.loading) {
      const generation = this.generation;
      this.loading = this.container
        .query({ partition: ROLE_ASSIGNMENTS_PK, where: [{ field: 'deleted', op: 'ne', value: true }] })
        .then(({ items }) => {
          const assignments = items.flatMap((a) => {
            const role = ROLES_BY_ID.get(a.role_definition_id.split('/').pop() ?? '');
            return role
              ? [
                  {
                    principal: a.principal_id.toLowerCase(),
                    scope: normalizeScope(a.scope, this.instanceId).toLowerCase(),
                    role,
                  },
                ]
              : [];
          });
          if (generation === this.generation) this.cache = { assignments, expires: Date.now() + this.ttlMs };
          return assignments;
        })
        .finally(() => {
          if (generation === this.generation) this.loading = undefined;
        });
    }
    return this.loading;
  }

  /** The role definitions the principal holds at the scope, directly or inherited from above. */
  async rolesAt(principal: Principal, scope: string): Promise<RoleDefinition[]> {
    if (principal.kind === 'anonymous') return [];
    const ids = new Set([principal.id, ...principal.groups].map((id) => id.toLowerCase()));
    const resource = normalizeScope(scope, this.instanceId).toLowerCase();
    const roles = new Map<string, RoleDefinition>();
    for (const a of await this.assignments()) {
      if (ids.has(a.principal) && covers(a.scope, resource)) roles.set(a.role.name, a.role);
    }
    return [...roles.values()];
  }

  async can(principal: Principal, action: string, scope: string): Promise<boolean> {
    return (await this.rolesAt(principal, scope)).some((r) => roleGrants(r, action));
  }

  async hasRole(principal: Principal, roleId: string, scope: string): Promise<boolean> {
    return (await this.rolesAt(principal, scope)).some((r) => r.name === roleId);
  }

  async require(principal: Principal, action: string, scope: string): Promise<void> {
    if (!(await this.can(principal, action, scope))) throw forbidden(`Not permitted to perform ${action} on ${scope}`);
  }

  async access(principal: Principal, scope: string, actions: readonly string[]): Promise<Access> {
    const roles = await this.rolesAt(principal, scope);
    return {
      roles: roles.map((r) => r.display_name).sort(),
      actions: actions.filter((action) => roles.some((r) => roleGrants(r, action))),
    };
  }
}
