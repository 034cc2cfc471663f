// Startup grants: BOOTSTRAP_OWNER_IDS (or the local default user) become Owner at instance scope.
import type { Config } from '../config.js';
import type { DocumentStore } from '../store/types.js';
import { LOCAL_DEFAULT_USER } from './local-idp.js';
import { ROLE_ASSIGNMENTS_PK, type RoleAssignmentDoc } from './rbac.js';
import { ROLE_IDS, roleDefinitionPath } from './roles.js';

/** The principals made Owner at startup: the setting, else the local IdP's default user when it is in use. */
export function bootstrapOwnerIds(config: Config): readonly string[] {
  return config.bootstrapOwnerIds ?? (config.auth.kind === 'local' ? [LOCAL_DEFAULT_USER.oid] : []);
}

/** Idempotent: each owner's assignment has a fixed name and is written only when missing. */
export async function bootstrapOwners(store: DocumentStore, config: Config): Promise<void> {
  const container = store.container<RoleAssignmentDoc & Record<string, unknown>>('resources');
  const scope = `/instances/${config.instanceId}`;
  for (const principalId of bootstrapOwnerIds(config)) {
    const name = `bootstrap-owner-${principalId.toLowerCase()}`.slice(0, 200);
    const existing = await container.read(ROLE_ASSIGNMENTS_PK, name);
    if (existing && !existing.deleted) continue;
    const now = new Date().toISOString();
    await container.upsert({
      id: name,
      pk: ROLE_ASSIGNMENTS_PK,
      type: 'role-assignment',
      name,
      object_id: `${scope}/providers/Svc.Authorization/roleAssignments/${name}`,
      principal_id: principalId,
      principal_type: 'User',
      role_definition_id: roleDefinitionPath(ROLE_IDS.owner),
      scope,
      description: 'Bootstrap owner (BOOTSTRAP_OWNER_IDS)',
      created_on: now,
      created_by: 'system',
      updated_on: now,
      updated_by: 'system',
      deleted: false,
    });
  }
}
