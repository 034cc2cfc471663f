// Svc.Authorization: role assignments (written by callers with the right role) and the built-in role
// definitions (read-only).
import { z } from 'zod';
import { ROLE_DEFINITIONS, ROLES_BY_ID, roleDefinitionPath } from './roles.js';
import { definition, type AnyResource, type ResourceKind, type ResourceOf } from './resource-type.js';

export const roleAssignments = {
  provider: 'Svc.Authorization',
  segment: 'roleAssignments',
  type: 'role-assignment',
  schema: definition('role-assignment', () => ({
    principal_id: z.string().min(1),
    principal_type: z.enum(['User', 'Group', 'ServicePrincipal']),
    role_definition_id: z
      .string()
      .transform((v) => roleDefinitionPath(v.split('/').pop() ?? ''))
      .refine(
        (v) => ROLES_BY_ID.has(v.split('/').pop() ?? ''),
        'must be a built-in role definition (/providers/Svc.Authorization/roleDefinitions/<guid>)',
      ),
    scope: z.string().min(1),
  })),
} satisfies ResourceKind;

/** A role assignment as stored: who (principal), which role, at which scope. */
export type RoleAssignmentDoc = ResourceOf<typeof roleAssignments>;

/** The partition of role assignments in the resources container. */
export const ROLE_ASSIGNMENTS_PK = 'Svc.Authorization/roleAssignments';

/** A role assignment the service itself writes (startup owners, an agent's creator and its tokens). */
export function serviceAssignment(
  instanceId: string,
  name: string,
  grant: {
    principalId: string;
    principalType: RoleAssignmentDoc['principal_type'];
    roleId: string;
    scope: string;
    note: string;
    by: string;
  },
): RoleAssignmentDoc {
  const now = new Date().toISOString();
  return {
    id: name,
    pk: ROLE_ASSIGNMENTS_PK,
    type: roleAssignments.type,
    name,
    object_id: `/instances/${instanceId}/providers/Svc.Authorization/roleAssignments/${name}`,
    principal_id: grant.principalId,
    principal_type: grant.principalType,
    role_definition_id: roleDefinitionPath(grant.roleId),
    scope: grant.scope,
    description: grant.note,
    created_on: now,
    created_by: grant.by,
    updated_on: now,
    updated_by: grant.by,
    deleted: false,
  };
}

export const roleDefinitions = {
  provider: 'Svc.Authorization',
  segment: 'roleDefinitions',
  type: 'role-definition',
  schema: definition('role-definition', () => ({})),
  builtIn: (): AnyResource[] =>
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
} satisfies ResourceKind;
