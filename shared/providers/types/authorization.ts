// Svc.Authorization: role assignments (written by callers with the right role) and the built-in role
// definitions (read-only).
import { z } from 'zod';
import { normalizeScope } from '../../auth/rbac.js';
import { ROLE_DEFINITIONS, ROLES_BY_ID, roleDefinitionPath } from '../../auth/roles.js';
import { badRequest } from '../../errors.js';

import { definition, type ResourceDoc, type ResourceType } from '../resource-type.js';

/** The absolute scope of an assignment; 400 unless it is `/` or lies within this instance. */
function assignableScope(given: string, instanceId: string): string {
  const scope = normalizeScope(given, instanceId);
  const instance = `/instances/${instanceId}`;
  if (scope !== '/' && scope.toLowerCase() !== instance && !scope.toLowerCase().startsWith(`${instance}/`)) {
    throw badRequest(`scope: must be / or lie within ${instance}`);
  }
  return scope;
}

export const roleAssignments: ResourceType = {
  provider: 'Svc.Authorization',
  segment: 'roleAssignments',
  type: 'role-assignment',
  schema: definition('role-assignment', {
    principal_id: z.string().min(1),
    principal_type: z.enum(['User', 'Group', 'ServicePrincipal']),
    role_definition_id: z
      .string()
      .transform((v) => roleDefinitionPath(v.split('/').pop() ?? ''))
      .refine((v) => ROLES_BY_ID.has(v.split('/').pop() ?? ''), 'must be a built-in role definition (/providers/Svc.Authorization/roleDefinitions/<guid>)'),
    scope: z.string().min(1),
  }),
  computed: (definition, _existing, ctx) => ({ scope: assignableScope(String(definition.scope), ctx.services.config.instanceId) }),
  // Assigning a role needs the right to write role assignments at the scope being granted, and changing an
  // assignment also at the scope it granted: nobody rewrites a grant they could not have made.
  authorizeWrite: async (definition, existing, { services, principal }) => {
    const write = 'Svc.Authorization/roleAssignments/write';
    await services.authorizer.require(principal, write, assignableScope(String(definition.scope), services.config.instanceId));
    if (existing) await services.authorizer.require(principal, write, assignableScope(String(existing.scope), services.config.instanceId));
  },
  // Deleting (and purging) an assignment needs the right at the scope it grants.
  authorizeDelete: (doc, { services, principal }) =>
    services.authorizer.require(principal, 'Svc.Authorization/roleAssignments/delete', assignableScope(String(doc.scope), services.config.instanceId)),
  afterChange: (_doc, { services }) => services.authorizer.invalidate(),
};

export const roleDefinitions: ResourceType = {
  provider: 'Svc.Authorization',
  segment: 'roleDefinitions',
  type: 'role-definition',
  schema: definition('role-definition', {}),
  builtIn: (): ResourceDoc[] =>
    ROLE_DEFINITIONS.map((r) => ({
      ...r,
      id: r.name,
      pk: 'Svc.Authorization/roleDefinitions',
      created_on: '2024-02-16T00:00:00.000Z',
      created_by: 'system',
      updated_on: '2024-02-16T00:00:00.000Z',
      updated_by: 'system',
      deleted: false,
    })),
};

