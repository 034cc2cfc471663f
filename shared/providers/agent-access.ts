// Which agents a caller may use through the Core API: by role assignment (Reader or higher on the agent or
// above it), and for a token holder only the one agent its token is bound to.
import type { Access } from '../auth/authorizer.js';
import type { Principal } from '../auth/principal.js';
import { DomainError, forbidden, notFound } from '../errors.js';
import { objectIdOf, partitionOf, resourceId, resourcesOf } from './types/resource-type.js';
import { agents, type AgentDoc } from './types/agent.js';
import type { Authorizer } from '../auth/authorizer.js';
import type { Config } from '../config.js';
import type { ResourceCache } from './resource-cache.js';
import type { DocumentStore } from '../store/types.js';

/** What this module uses of the service (the hosts pass the whole of it). */
export interface AgentAccessDeps {
  readonly authorizer: Authorizer;
  readonly config: Config;
  readonly resourceCache: ResourceCache;
  readonly store: DocumentStore;
}

export const USE_AGENT = 'Svc.Agent/agents/read';
const AGENT_ACTIONS = ['read', 'write', 'delete'].map((v) => `Svc.Agent/agents/${v}`);

const expired = (agent: AgentDoc) =>
  agent.expiration_date !== undefined && Date.parse(agent.expiration_date) <= Date.now();

/** The agent, when the principal may use it; otherwise the agent provider's 403 or 404. */
export async function agentForUse(s: AgentAccessDeps, principal: Principal, agentName: string): Promise<AgentDoc> {
  if (principal.kind === 'agent-token' && resourceId(principal.agentName ?? '') !== resourceId(agentName)) {
    throw forbidden(`This agent access token is bound to another agent`);
  }
  const agent = await s.resourceCache.get(objectIdOf(s.config.instanceId, agents, agentName), agents);
  if (!agent) throw notFound(`Agent ${agentName} not found`);
  if (!(await s.authorizer.can(principal, USE_AGENT, agent.object_id)))
    throw forbidden(`Not permitted to use agent ${agentName}`);
  if (expired(agent)) throw forbidden(`Agent ${agentName} has expired`);
  return agent;
}

/**
 * The agent, when the principal may use it; otherwise `refusal` (by default a 404), alike for an agent that
 * does not exist and one that is not theirs: the protocols' discovery never tells the two apart.
 */
export function agentOrNotFound(
  s: AgentAccessDeps,
  principal: Principal,
  agentName: string,
  options: { refusal?: () => DomainError } = {},
): Promise<AgentDoc> {
  const refusal = options.refusal ?? (() => notFound(`Agent ${agentName} not found`));
  return agentForUse(s, principal, agentName).catch((e: unknown) => {
    throw e instanceof DomainError && (e.kind === 'not-found' || e.kind === 'forbidden') ? refusal() : e;
  });
}

/** Every agent the principal may use, with its roles and actions there. */
export async function usableAgents(
  s: AgentAccessDeps,
  principal: Principal,
): Promise<{ agent: AgentDoc; access: Access }[]> {
  const { items } = await resourcesOf(s.store, agents).query({
    partition: partitionOf(agents),
    where: [
      { field: 'deleted', op: 'ne', value: true },
      ...(principal.kind === 'agent-token' && principal.agentName
        ? [{ field: 'name', op: 'eq' as const, value: principal.agentName }]
        : []),
    ],
    orderBy: [{ field: 'name' }],
  });
  const usable: { agent: AgentDoc; access: Access }[] = [];
  for (const agent of items) {
    if (expired(agent)) continue;
    const access = await s.authorizer.access(principal, agent.object_id, AGENT_ACTIONS);
    if (access.actions.includes(USE_AGENT)) usable.push({ agent, access });
  }
  return usable;
}

/**
 * What a turn sent to its model may be shown to its caller only when the agent shows its prompt
 * (`show_view_prompt`, default true), or to one who may write the agent: the agent's instructions are not
 * every user's to read.
 */
export async function requirePromptView(s: AgentAccessDeps, principal: Principal, agentName: string): Promise<void> {
  const agent = await s.resourceCache.get(objectIdOf(s.config.instanceId, agents, agentName), agents);
  if (!agent || agent.show_view_prompt !== false) return;
  if (await s.authorizer.can(principal, 'Svc.Agent/agents/write', agent.object_id)) return;
  throw forbidden(`Agent ${agent.name} does not show the prompts it sends`);
}
