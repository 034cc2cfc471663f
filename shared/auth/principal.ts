// The authenticated caller as every handler sees it, whichever scheme authenticated it, and the credentials a
// route accepts. The vocabulary of identity that the HTTP layer and the features share.

/**
 * What a route accepts: nothing, identity-provider bearer tokens, those or agent access tokens (`any`), or
 * (`protocol`, the OpenAI, MCP and A2A facades) either of them as the clients of those protocols send them:
 * an agent access token also as `Authorization: Bearer` or `api-key`.
 */
export type AuthMode = 'none' | 'bearer' | 'any' | 'protocol';

export interface Principal {
  /** `user` for identity-provider tokens, `agent-token` for agent access tokens. */
  readonly kind: 'user' | 'agent-token' | 'anonymous';
  /** Principal id: the token's `oid` (else `sub`), or the agent access token id. */
  readonly id: string;
  readonly upn: string;
  readonly name: string | null;
  readonly userName: string | null;
  /** Group ids from the token (or the agent's virtual groups). */
  readonly groups: readonly string[];
  /** The token names too many groups to carry them (Entra ID's groups overage): read them from the directory. */
  readonly groupsOverage?: boolean;
  /** Delegated scopes (`scp`), e.g. `Data.Read` for agent access tokens. */
  readonly scopes: readonly string[];
  /** App roles (`roles` claim). */
  readonly appRoles: readonly string[];
  /** For agent access tokens: the one agent the token is bound to. */
  readonly agentName?: string;
}

/**
 * The key of a user's own data (sessions, messages, files, memory, usage, operations): the UPN, case-folded,
 * so one person is one owner however the identity provider capitalises the name from one sign-in to the next.
 */
export const ownerKey = (upn: string) => upn.toLowerCase();

export const ANONYMOUS: Principal = {
  kind: 'anonymous',
  id: '',
  upn: '',
  name: null,
  userName: null,
  groups: [],
  scopes: [],
  appRoles: [],
};

const strings = (v: unknown): string[] =>
  Array.isArray(v) ? v.filter((s): s is string => typeof s === 'string') : typeof v === 'string' ? v.split(' ') : [];
const text = (v: unknown): string | null => (typeof v === 'string' && v.length > 0 ? v : null);

/** Maps verified JWT claims to a principal; null when no id or UPN can be found. */
export function principalFromClaims(claims: Record<string, unknown>): Principal | null {
  const id = text(claims.oid) ?? text(claims.sub);
  const upn = text(claims.upn) ?? text(claims.preferred_username) ?? text(claims.email);
  if (!id || !upn) return null;
  return {
    kind: 'user',
    id,
    upn,
    name: text(claims.name),
    userName: text(claims.preferred_username) ?? upn,
    groups: strings(claims.groups),
    ...(overage(claims) ? { groupsOverage: true } : {}),
    scopes: strings(claims.scp),
    appRoles: strings(claims.roles),
  };
}

/** Entra ID's groups overage: `_claim_names.groups` (or `hasgroups`) instead of a `groups` claim. */
const overage = (claims: Record<string, unknown>) =>
  claims.hasgroups === true ||
  (typeof claims._claim_names === 'object' && claims._claim_names !== null && 'groups' in claims._claim_names);
