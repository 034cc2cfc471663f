// Resources written through the resource provider itself (the route's schema, then the type's rules), for
// tests that run the service's code in process, without HTTP.
import type { Principal } from '../../shared/auth/principal.js';
import { LOCAL_DEFAULT_USER } from '../../shared/auth/local-idp.js';
import { servedType } from '../../shared/registry/registry.js';
import type { ResourceKind } from '../../shared/providers/types/resource-type.js';
import { upsertResource } from '../../shared/providers/resources.js';
import type { Services } from '../../shared/services.js';

/** The local bootstrap owner: Owner of the instance. */
export const OWNER: Principal = {
  kind: 'user',
  id: LOCAL_DEFAULT_USER.oid,
  upn: LOCAL_DEFAULT_USER.upn,
  name: 'Owner',
  userName: null,
  groups: [],
  scopes: [],
  appRoles: [],
};

export const user = (upn: string, id = `id-${upn}`): Principal => ({
  kind: 'user',
  id,
  upn,
  name: upn,
  userName: null,
  groups: [],
  scopes: [],
  appRoles: [],
});

/** Creates or updates a resource as its route would (the body checked by the kind's schema). */
export async function put(
  s: Services,
  kind: ResourceKind,
  name: string,
  body: Record<string, unknown>,
  by: Principal = OWNER,
): Promise<string> {
  const definition = kind.schema.parse({ name, ...body });
  return (await upsertResource(s, { type: servedType(kind), principal: by, name }, definition)).object_id;
}
