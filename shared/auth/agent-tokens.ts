// Agent access tokens: issue, list, revoke and verify. Only a hash of the secret is
// stored; a verified token costs one point read when cold and none while cached.
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { badRequest, notFound, unauthorized } from '../errors.js';
import { resourceId } from '../providers/types/resource-type.js';
import type { AgentDoc } from '../providers/types/agent.js';
import type { Container, Doc, Page } from '../store/types.js';
import { updateDocument } from '../store/update.js';
import type { AgentTokenVerifier } from './authenticate.js';
import type { Principal } from './principal.js';
import { formatToken, hashSecret, newSecret, parseToken } from './token-format.js';

/** The stored token: no secret, only its hash. pk = the agent's resource id (its case-folded name), id = token id. */
export interface AgentTokenDoc extends Doc {
  type: 'agent-access-token';
  name: string;
  description: string | null;
  expiration_date: string | null;
  active: boolean;
  agent_name: string;
  object_id: string;
  /** The agent's virtual security group, copied at creation: stable for the agent's life. */
  virtual_security_group_id: string;
  secret_sha256: string;
  created_on: string;
  created_by: string;
  /** When a request last authenticated with it (to the minute: written at most once a minute per instance). */
  last_used_on?: string;
}

declare module '../store/types.js' {
  interface StoredDocs {
    tokens: AgentTokenDoc;
  }
}

/** The token as list and get show it: never the secret or its hash. */
export interface AgentTokenView {
  type: 'agent-access-token';
  name: string;
  object_id: string;
  id: string;
  active: boolean;
  description: string | null;
  expiration_date: string | null;
  last_used_on: string | null;
}

export interface VirtualIdentity {
  user_id: string;
  name: string;
  upn: string;
  group_ids: string[];
}

export const view = (d: AgentTokenDoc): AgentTokenView => ({
  type: d.type,
  name: d.name,
  object_id: d.object_id,
  id: d.id,
  active: d.active,
  description: d.description,
  expiration_date: d.expiration_date,
  last_used_on: d.last_used_on ?? null,
});

/** The all-agents virtual security group of an instance: derived, so every instance knows it. */
export function allAgentsGroupId(instanceId: string): string {
  const h = createHash('sha256').update(`${instanceId.toLowerCase()}:all-agents`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

const CACHE_MS = 30_000;
/** How stale a token's last-used time may be: a request writes it only when it is older than this. */
const LAST_USED_MS = 60_000;

/** The live agent of a name (the resource cache), or undefined when it does not exist or is deleted. */
export type AgentLookup = (name: string) => Promise<Pick<AgentDoc, 'virtual_security_group_id'> | undefined>;

/** The instance whose agents the tokens are for, the domain of their principals' names, and the agents by name. */
export interface AgentTokensOptions {
  instanceId: string;
  internalDomain: string;
  agentOf: AgentLookup;
}

export class AgentTokens implements AgentTokenVerifier {
  // Verified token records by token id; dropped on delete here, and after CACHE_MS everywhere.
  private readonly cache = new Map<string, { doc: AgentTokenDoc; until: number }>();

  private readonly instanceId: string;
  private readonly internalDomain: string;
  private readonly agentOf: AgentLookup;

  constructor(
    private readonly container: Container<AgentTokenDoc>,
    { instanceId, internalDomain, agentOf }: AgentTokensOptions,
  ) {
    this.instanceId = instanceId;
    this.internalDomain = internalDomain;
    this.agentOf = agentOf;
  }

  /** Issues a token; the returned token string is the only copy of the secret. */
  async create(
    agent: { name: string; object_id: string; virtual_security_group_id: string },
    input: { name: string; description?: string | undefined; expiration_date?: string | undefined },
    createdBy: string,
  ): Promise<{ doc: AgentTokenDoc; token: string }> {
    if (input.expiration_date !== undefined && Date.parse(input.expiration_date) <= Date.now()) {
      throw badRequest('expiration_date: must be in the future');
    }
    const id = randomUUID();
    const secret = newSecret();
    const doc: AgentTokenDoc = {
      id,
      pk: resourceId(agent.name),
      type: 'agent-access-token',
      name: input.name,
      description: input.description ?? null,
      expiration_date: input.expiration_date ? new Date(input.expiration_date).toISOString() : null,
      active: true,
      agent_name: agent.name,
      object_id: `${agent.object_id}/agentAccessTokens/${id}`,
      virtual_security_group_id: agent.virtual_security_group_id,
      secret_sha256: hashSecret(id, secret).toString('hex'),
      created_on: new Date().toISOString(),
      created_by: createdBy,
    };
    await this.container.create(doc);
    return { doc, token: formatToken({ instanceId: this.instanceId, agentName: agent.name, tokenId: id, secret }) };
  }

  /** A page of an agent's tokens, oldest first. */
  list(agentName: string, continuation: string | undefined, limit: number): Promise<Page<AgentTokenDoc>> {
    return this.container.query({
      partition: resourceId(agentName),
      orderBy: [{ field: 'created_on' }],
      limit,
      ...(continuation !== undefined ? { continuation } : {}),
    });
  }

  /**
   * Activates or deactivates a token: refused at once on this instance, and within the cache's 30 s on every
   * other (as a configuration change). 404 for a token that is not the agent's.
   */
  async setActive(agentName: string, tokenId: string, active: boolean): Promise<AgentTokenDoc> {
    this.cache.delete(tokenId.toLowerCase());
    const saved = await updateDocument(
      this.container,
      { pk: resourceId(agentName), id: tokenId.toLowerCase() },
      (doc) => (doc ? { ...doc, active } : undefined),
    );
    this.cache.delete(tokenId.toLowerCase());
    if (!saved) throw notFound(`Agent access token ${tokenId} not found`);
    return saved;
  }

  async delete(agentName: string, tokenId: string): Promise<void> {
    this.cache.delete(tokenId.toLowerCase());
    if (!(await this.container.delete(resourceId(agentName), tokenId)))
      throw notFound(`Agent access token ${tokenId} not found`);
  }

  /** Removes every token of an agent (its purge): a later agent of the same name starts with none. */
  async deleteAll(agentName: string): Promise<void> {
    const { items } = await this.container.query({ partition: resourceId(agentName) });
    for (const doc of items) {
      this.cache.delete(doc.id);
      await this.container.delete(doc.pk, doc.id);
    }
  }

  /**
   * The six validation steps of an agent access token (docs/api-decisions.md, Agent access tokens), in order; the
   * reason of the first that fails, or the token. The secret is compared in constant time on fixed-length hashes,
   * whatever length was sent.
   */
  async check(token: string): Promise<{ ok: true; doc: AgentTokenDoc } | { ok: false; reason: string }> {
    const parts = parseToken(token);
    if (!parts || parts.instanceId.toLowerCase() !== this.instanceId)
      return { ok: false, reason: 'Agent access token is malformed' };
    const key = parts.tokenId.toLowerCase();
    const hit = this.cache.get(key);
    let doc = hit && hit.until > Date.now() ? hit.doc : undefined;
    if (!doc) {
      this.cache.delete(key);
      doc = await this.container.read(resourceId(parts.agentName), key);
      if (!doc) return { ok: false, reason: 'Agent access token not found' };
    }
    if (doc.expiration_date !== null && Date.parse(doc.expiration_date) <= Date.now()) {
      this.cache.delete(key);
      return { ok: false, reason: 'Agent access token expired' };
    }
    if (!doc.active) return { ok: false, reason: 'Agent access token is inactive' };
    if (resourceId(doc.agent_name) !== resourceId(parts.agentName))
      return { ok: false, reason: 'Agent access token belongs to another agent' };
    // Bound to the agent's identity, not its name: a new agent of the same name is another agent.
    const agent = await this.agentOf(doc.agent_name);
    if (agent?.virtual_security_group_id !== doc.virtual_security_group_id)
      return { ok: false, reason: 'Agent access token belongs to another agent' };
    if (!timingSafeEqual(hashSecret(key, parts.secret), Buffer.from(doc.secret_sha256, 'hex'))) {
      return { ok: false, reason: 'Agent access token secret is invalid' };
    }
    if (!hit) {
      if (this.cache.size > 10_000) this.cache.clear();
      this.cache.set(key, { doc, until: Date.now() + CACHE_MS });
    }
    this.touch(doc);
    return { ok: true, doc };
  }

  /** Records the token's use when its last-used time is older than a minute; a failed write only leaves it older. */
  private touch(doc: AgentTokenDoc): void {
    const now = Date.now();
    if (doc.last_used_on !== undefined && now - Date.parse(doc.last_used_on) < LAST_USED_MS) return;
    doc.last_used_on = new Date(now).toISOString();
    this.container
      .patch(doc.pk, doc.id, [{ op: 'set', path: 'last_used_on', value: doc.last_used_on }])
      .catch(() => undefined);
  }

  identity(doc: AgentTokenDoc): VirtualIdentity {
    return {
      user_id: doc.id,
      name: doc.id,
      upn: `aat_${doc.agent_name}_${doc.id}@${this.internalDomain}`,
      group_ids: [doc.virtual_security_group_id, allAgentsGroupId(this.instanceId)],
    };
  }

  /** The X-AGENT-ACCESS-TOKEN scheme: the token's virtual identity with Data.Read scope only. */
  async verify(token: string): Promise<Principal> {
    const result = await this.check(token);
    if (!result.ok) throw unauthorized(result.reason);
    const v = this.identity(result.doc);
    return {
      kind: 'agent-token',
      id: v.user_id,
      upn: v.upn,
      name: v.name,
      userName: v.name,
      groups: v.group_ids,
      scopes: ['Data.Read'],
      appRoles: [],
      agentName: result.doc.agent_name,
    };
  }
}
