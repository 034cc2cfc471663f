// Identity: the calling principal with its role assignments, and principal search.
import { z } from 'zod';
import { ROLE_ASSIGNMENTS_PK, roleAssignments } from '../shared/providers/types/authorization.js';
import { ROLES_BY_ID } from '../shared/providers/types/roles.js';
import { defineRoute } from '../shared/http/route.js';
import { InstanceParams } from '../shared/schemas.js';
import { json } from '../shared/http/types.js';
import { resourcesOf } from '../shared/providers/types/resource-type.js';

const Assignment = z.object({
  name: z.string(),
  object_id: z.string(),
  principal_id: z.string(),
  principal_type: z.string(),
  role_definition_id: z.string(),
  role_name: z.string(),
  scope: z.string(),
});
const Identity = z
  .object({
    id: z.string(),
    upn: z.string(),
    name: z.string().nullable(),
    user_name: z.string().nullable(),
    principal_type: z.string(),
    group_ids: z.array(z.string()),
    role_assignments: z.array(Assignment),
  })
  .meta({ id: 'Identity' });
const Principal = z
  .object({
    id: z.string(),
    principal_type: z.enum(['User', 'Group', 'ServicePrincipal']),
    upn: z.string().nullable(),
    display_name: z.string().nullable(),
    email: z.string().nullable(),
  })
  .meta({ id: 'SecurityPrincipal' });

export const routes = [
  defineRoute({
    name: 'identity-get',
    api: 'management',
    method: 'GET',
    path: '/instances/{instanceId}/identity',
    summary: 'The calling principal, its groups and the role assignments that name it or its groups',
    tag: 'Identity',
    auth: 'bearer',
    errors: 'management',
    params: InstanceParams,
    responses: { 200: { description: 'The caller', schema: Identity } },
    handler: async ({ services, principal }) => {
      const ids = [principal.id, ...principal.groups];
      const { items } = await resourcesOf(services.store, roleAssignments).query({
        partition: ROLE_ASSIGNMENTS_PK,
        where: [
          { field: 'principal_id', op: 'in', value: ids },
          { field: 'deleted', op: 'ne', value: true },
        ],
        orderBy: [{ field: 'scope' }],
      });
      return json(200, {
        id: principal.id,
        upn: principal.upn,
        name: principal.name,
        user_name: principal.userName,
        principal_type: 'User',
        group_ids: principal.groups,
        role_assignments: items.map((a) => ({
          name: a.name,
          object_id: a.object_id,
          principal_id: a.principal_id,
          principal_type: a.principal_type,
          role_definition_id: a.role_definition_id,
          role_name: ROLES_BY_ID.get(a.role_definition_id.split('/').pop() ?? '')?.display_name ?? 'Unknown',
          scope: a.scope,
        })),
      });
    },
  }),
  defineRoute({
    name: 'identity-search-principals',
    api: 'management',
    method: 'GET',
    path: '/instances/{instanceId}/identity/securityPrincipals',
    summary: 'Search users and groups by name, UPN or id (needs read on role assignments)',
    tag: 'Identity',
    auth: 'bearer',
    errors: 'management',
    params: InstanceParams,
    query: z.object({
      search: z.string().trim().min(1, 'search is required').max(200).describe('Part of a name, UPN or id'),
    }),
    permission: ({ params }) => ({
      action: 'Svc.Authorization/roleAssignments/read',
      scope: `/instances/${params.instanceId}`,
    }),
    responses: { 200: { description: 'Matching principals (at most 25)', schema: z.array(Principal) } },
    handler: async ({ services, query }) => json(200, await services.directory.search(query.search)),
  }),
];
