// The agent resource type: its definition (spec 2.9 and 2.12) and what creating one sets up.
import { createHash, randomUUID } from 'node:crypto';
import { z } from 'zod';
import { ROLE_ASSIGNMENTS_PK, type RoleAssignmentDoc } from '../../auth/rbac.js';
import { ROLE_IDS, roleDefinitionPath } from '../../auth/roles.js';
import { definition, type HookContext, type ResourceDoc, type ResourceType } from '../resource-type.js';
import { GatekeeperSettings, WRITABLE_SCALARS, WRITABLE_SETTINGS } from './agent-settings.js';
import { checkAgentLinks } from './agent-links.js';

const { display_name: _d, description: _s, ...scalars } = WRITABLE_SCALARS;

export const AgentDefinition = definition('agent', {
  inline_context: z.boolean().optional(),
  workflow_object_id: z.string().optional(),
  tool_object_ids: z.array(z.string()).optional(),
  gatekeeper_settings: GatekeeperSettings.nullable().optional(),
  metadata: z.object({ welcome_message: z.string().nullable().optional() }).strict().optional(),
  virtual_security_group_id: z.string().optional().describe('Set by the service; ignored in requests'),
  owner_user_id: z.string().optional().describe('Changed only through set-properties; ignored here'),
  ...Object.fromEntries(Object.entries({ ...scalars, ...WRITABLE_SETTINGS }).map(([k, v]) => [k, v.optional()])),
});

/** A deterministic assignment name, so setting up the same grant twice writes one assignment. */
export const assignmentName = (scope: string, principalId: string, roleId: string) => {
  const h = createHash('sha256').update(`${scope}|${principalId.toLowerCase()}|${roleId}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
};

/** Writes a role assignment the service itself grants (not subject to the caller's permissions). */
export async function grant(
  ctx: HookContext,
  grantee: { id: string; type: 'User' | 'Group' | 'ServicePrincipal' },
  roleId: string,
  scope: string,
  note: string,
): Promise<void> {
  const name = assignmentName(scope, grantee.id, roleId);
  const now = new Date().toISOString();
  const doc: RoleAssignmentDoc & Record<string, unknown> = {
    id: name,
    pk: ROLE_ASSIGNMENTS_PK,
    type: 'role-assignment',
    name,
    object_id: `/instances/${ctx.services.config.instanceId}/providers/Svc.Authorization/roleAssignments/${name}`,
    principal_id: grantee.id,
    principal_type: grantee.type,
    role_definition_id: roleDefinitionPath(roleId),
    scope,
    description: note,
    created_on: now,
    created_by: ctx.principal.upn || 'system',
    updated_on: now,
    updated_by: ctx.principal.upn || 'system',
    deleted: false,
  };
  await ctx.services.store.container<RoleAssignmentDoc>('resources').upsert(doc);
  ctx.services.authorizer.invalidate();
}

export const agents: ResourceType = {
  provider: 'Svc.Agent',
  segment: 'agents',
  type: 'agent',
  schema: AgentDefinition,
  validate: (definition, { services }) => checkAgentLinks(services, definition),
  computed: (_definition, existing, ctx) => ({
    // Stable for the agent's life: every access token of the agent shares it (spec 2.10).
    virtual_security_group_id: existing?.virtual_security_group_id ?? randomUUID(),
    owner_user_id: existing?.owner_user_id ?? ctx.principal.id,
  }),
  afterCreate: async (doc: ResourceDoc, ctx) => {
    await grant(ctx, { id: ctx.principal.id, type: 'User' }, ROLE_IDS.owner, doc.object_id, 'Creator of the agent');
    await grant(ctx, { id: String(doc.virtual_security_group_id), type: 'Group' }, ROLE_IDS.reader, doc.object_id, 'Agent access tokens of the agent');
  },
  // A purged agent takes its role assignments and access tokens with it: a new agent of that name starts clean.
  afterPurge: async (doc, ctx) => {
    const c = ctx.services.store.container<RoleAssignmentDoc>('resources');
    const { items } = await c.query({ partition: ROLE_ASSIGNMENTS_PK });
    const scope = doc.object_id.toLowerCase();
    for (const a of items) {
      const assigned = a.scope.toLowerCase();
      if (assigned === scope || assigned.startsWith(`${scope}/`)) await c.delete(a.pk, a.id);
    }
    ctx.services.authorizer.invalidate();
    await ctx.services.agentTokens.deleteAll(doc.name);
  },
};
