// Startup grants: BOOTSTRAP_OWNER_IDS (or the local default user) become Owner at instance scope.
import type { Config } from '../config.js';
import type { DocumentStore } from '../store/types.js';
import { LOCAL_DEFAULT_USER } from './local-idp.js';
import { ROLE_ASSIGNMENTS_PK, roleAssignments, serviceAssignment } from '../providers/types/authorization.js';
import { ROLE_IDS } from '../providers/types/roles.js';
import { resourcesOf } from '../providers/types/resource-type.js';

/** The principals made Owner at startup: the setting, else the local IdP's default user when it is in use. */
export function bootstrapOwnerIds(config: Config): readonly string[] {
  return config.bootstrapOwnerIds ?? (config.auth.kind === 'local' ? [LOCAL_DEFAULT_USER.oid] : []);
}

/** Idempotent: each owner's assignment has a fixed name and is written only when missing. */
export async function bootstrapOwners(store: DocumentStore, config: Config): Promise<void> {
  const container = resourcesOf(store, roleAssignments);
  const scope = `/instances/${config.instanceId}`;
  for (const principalId of bootstrapOwnerIds(config)) {
    const name = `bootstrap-owner-${principalId.toLowerCase()}`.slice(0, 200);
    const existing = await container.read(ROLE_ASSIGNMENTS_PK, name);
    if (existing && !existing.deleted) continue;
    await container.upsert(
      serviceAssignment(config.instanceId, name, {
        principalId,
        principalType: 'User',
        roleId: ROLE_IDS.owner,
        scope,
        note: 'Bootstrap owner (BOOTSTRAP_OWNER_IDS)',
        by: 'system',
      }),
    );
  }
}
