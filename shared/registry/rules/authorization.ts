// Rules of role assignments: scopes are absolute and within the instance, and a grant can be written,
// changed or removed only by a principal who could have made it.
import { normalizeScope } from '../../auth/rbac.js';
import { badRequest } from '../../errors.js';
import type { ResourceRules } from '../../providers/resource-rules.js';
import type { roleAssignments } from '../../providers/types/authorization.js';

/** The absolute scope of an assignment; 400 unless it is `/` or lies within this instance. */
function assignableScope(given: string, instanceId: string): string {
  const scope = normalizeScope(given, instanceId);
  const instance = `/instances/${instanceId}`;
  if (scope !== '/' && scope.toLowerCase() !== instance && !scope.toLowerCase().startsWith(`${instance}/`)) {
    throw badRequest(`scope: must be / or lie within ${instance}`);
  }
  return scope;
}

const WRITE = 'Svc.Authorization/roleAssignments/write';

export const roleAssignmentRules: ResourceRules<typeof roleAssignments> = {
  computed: (definition, _existing, ctx) => ({
    scope: assignableScope(definition.scope, ctx.services.config.instanceId),
  }),
  // Assigning a role needs the right to write role assignments at the scope being granted, and changing an
  // assignment also at the scope it granted: nobody rewrites a grant they could not have made.
  authorizeWrite: async (definition, existing, { services, principal }) => {
    await services.authorizer.require(principal, WRITE, assignableScope(definition.scope, services.config.instanceId));
    if (existing)
      await services.authorizer.require(principal, WRITE, assignableScope(existing.scope, services.config.instanceId));
  },
  // Deleting (and purging) an assignment needs the right at the scope it grants.
  authorizeDelete: (doc, { services, principal }) =>
    services.authorizer.require(
      principal,
      'Svc.Authorization/roleAssignments/delete',
      assignableScope(doc.scope, services.config.instanceId),
    ),
  afterChange: (_doc, { services }) => services.authorizer.invalidate(),
};
