// Rules of agents: what a definition links must be of the right kind, and creating an agent grants its
// creator Owner and its access tokens Reader; purging one takes its grants and tokens with it.
import { createHash, randomUUID } from 'node:crypto';
import { ROLE_IDS } from '../../providers/types/roles.js';
import type { HookContext, ResourceRules } from '../../providers/resource-rules.js';
import type { agents } from '../../providers/types/agent.js';
import {
  ROLE_ASSIGNMENTS_PK,
  type RoleAssignmentDoc,
  roleAssignments,
  serviceAssignment,
} from '../../providers/types/authorization.js';
import { authorizeAgentLinks, checkAgentLinks } from './agent-links.js';
import { resourcesOf } from '../../providers/types/resource-type.js';

/** A deterministic assignment name, so setting up the same grant twice writes one assignment. */
export const assignmentName = (scope: string, principalId: string, roleId: string) => {
  const h = createHash('sha256').update(`${scope}|${principalId.toLowerCase()}|${roleId}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
};

/** A role the service grants: to whom, which role, at what scope, and the note the assignment carries. */
export interface Grant {
  grantee: { id: string; type: RoleAssignmentDoc['principal_type'] };
  roleId: string;
  scope: string;
  note: string;
}

/** Writes a role assignment the service itself grants (not subject to the caller's permissions). */
export async function grant(ctx: HookContext, { grantee, roleId, scope, note }: Grant): Promise<void> {
  const name = assignmentName(scope, grantee.id, roleId);
  const doc = serviceAssignment(ctx.services.config.instanceId, name, {
    principalId: grantee.id,
    principalType: grantee.type,
    roleId,
    scope,
    note,
    by: ctx.principal.upn || 'system',
  });
  await resourcesOf(ctx.services.store, roleAssignments).upsert(doc);
  ctx.services.authorizer.invalidate();
}

export const agentRules: ResourceRules<typeof agents> = {
  validate: (definition, { services }) => checkAgentLinks(services, definition),
  authorizeWrite: (definition, existing, { services, principal }) =>
    authorizeAgentLinks(services, principal, { definition, existing }),
  computed: (_definition, existing, ctx) => ({
    // Stable for the agent's life: every access token of the agent shares it.
    virtual_security_group_id: existing?.virtual_security_group_id ?? randomUUID(),
    owner_user_id: existing?.owner_user_id ?? ctx.principal.id,
  }),
  afterCreate: async (doc, ctx) => {
    await grant(ctx, {
      grantee: { id: ctx.principal.id, type: 'User' },
      roleId: ROLE_IDS.owner,
      scope: doc.object_id,
      note: 'Creator of the agent',
    });
    if (doc.virtual_security_group_id)
      await grant(ctx, {
        grantee: { id: doc.virtual_security_group_id, type: 'Group' },
        roleId: ROLE_IDS.reader,
        scope: doc.object_id,
        note: 'Agent access tokens of the agent',
      });
  },
  // A purged agent takes its role assignments and access tokens with it: a new agent of that name starts clean.
  afterPurge: async (doc, ctx) => {
    const c = resourcesOf(ctx.services.store, roleAssignments);
    // The assignments and their versions (a version keeps the scope it granted under `definition`).
    const { items } = await c.query({ partition: ROLE_ASSIGNMENTS_PK });
    const scope = doc.object_id.toLowerCase();
    for (const a of items) {
      // A version holds no scope of its own: the one it granted is in its definition.
      const fields = new Map<string, unknown>(Object.entries(a));
      const definition = fields.get('definition');
      const granted =
        fields.get('scope') ??
        (typeof definition === 'object' && definition !== null && 'scope' in definition ? definition.scope : undefined);
      const assigned = typeof granted === 'string' ? granted.toLowerCase() : '';
      if (assigned === scope || assigned.startsWith(`${scope}/`)) await c.delete(a.pk, a.id);
    }
    ctx.services.authorizer.invalidate();
    await ctx.services.agentTokens.deleteAll(doc.name);
  },
};
