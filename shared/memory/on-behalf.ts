// A trusted tool server acting for a user: its own credential plus X-USER-IDENTITY. Only principals
// holding the Memory.ActOnBehalf app role may send the header; from anyone else it is refused with 403.
import { z } from 'zod';
import { oidForUpn } from '../auth/local-idp.js';
import type { Principal } from '../auth/principal.js';
import type { UpnBindings } from '../auth/upn-bindings.js';
import { badRequest, forbidden } from '../errors.js';
import type { PlatformRequest } from '../http/types.js';

export const ACT_ON_BEHALF_ROLE = 'Memory.ActOnBehalf';
export const USER_IDENTITY_HEADER = 'x-user-identity';

/** The forwarded identity: JSON, or base64 of JSON (for header-safe transport of non-ASCII names). */
export const UserIdentity = z
  .object({
    upn: z.string().min(3),
    oid: z.string().min(1).optional(),
    name: z.string().nullable().optional(),
    user_name: z.string().nullable().optional(),
    group_ids: z.array(z.string()).optional(),
  })
  .strict();
export type UserIdentity = z.infer<typeof UserIdentity>;

function parse(raw: string): unknown {
  const text = raw.trim().startsWith('{') ? raw : Buffer.from(raw, 'base64').toString('utf8');
  return JSON.parse(text);
}

/**
 * The principal memory operations act for: the caller, or the user it forwards when it may. A forwarded
 * identity with an object id is the owner its UPN binding makes it (a reused UPN reads no one else's memory).
 */
export async function actingPrincipal(
  caller: Principal,
  request: PlatformRequest,
  bindings: UpnBindings,
): Promise<Principal> {
  const header = request.header(USER_IDENTITY_HEADER);
  if (header === undefined) return caller;
  if (caller.kind !== 'user' || !caller.appRoles.includes(ACT_ON_BEHALF_ROLE)) {
    throw forbidden(`X-USER-IDENTITY is accepted only from principals with the ${ACT_ON_BEHALF_ROLE} app role`);
  }
  let identity: UserIdentity;
  try {
    identity = UserIdentity.parse(parse(header));
  } catch {
    throw badRequest('X-USER-IDENTITY must be a JSON identity with at least a upn', [
      { field: 'X-USER-IDENTITY', message: 'must be a JSON identity with at least a upn' },
    ]);
  }
  const forwarded: Principal = {
    kind: 'user',
    id: identity.oid ?? oidForUpn(identity.upn),
    upn: identity.upn,
    name: identity.name ?? null,
    userName: identity.user_name ?? identity.upn,
    groups: identity.group_ids ?? [],
    scopes: [],
    appRoles: [],
  };
  return identity.oid !== undefined ? bindings.owner(forwarded) : forwarded;
}
