// Admission to the completion pipeline: the request is checked against everything it can fail on before work
// starts (the agent and the caller's access to it, the session, the attachments) and given the scope of the
// caller's knowledge searches.
import { DomainError, forbidden, validationError } from '../errors.js';
import type { Principal } from '../auth/principal.js';
import { agentForUse, usableAgents } from '../providers/agent-access.js';
import type { AgentDoc } from '../providers/types/agent.js';
import type { SessionDoc } from '../conversations/conversations.js';
import type { FileDoc } from '../files/files.js';
import type { Stored } from '../store/types.js';
import { parseFilter } from '../knowledge/filter.js';
import type { KnowledgeScope } from '../knowledge/retrieval.js';
import type { CompletionRequest, Facade } from './completion-request.js';
import type { CompletionDeps } from './completion-deps.js';

const AGENT_REFUSED = 'Agent not found or access denied';
const agentError = () => validationError([{ field: 'agent_name', message: AGENT_REFUSED }]);

/**
 * Whether admission failed because the agent is missing or not the caller's to use (the facades say "not found" for
 * both).
 */
export const isAgentRefusal = (e: unknown) =>
  e instanceof DomainError &&
  e.message === AGENT_REFUSED &&
  (e.kind === 'forbidden' || e.details[0]?.field === 'agent_name');

/** The agent a request is for: named, the token's own, or the caller's only usable agent. */
export async function resolveAgent(
  s: CompletionDeps,
  principal: Principal,
  agentName: string | undefined,
): Promise<AgentDoc> {
  const name = agentName ?? principal.agentName;
  if (name === undefined) {
    const usable = await usableAgents(s, principal);
    if (usable.length === 1 && usable[0]) return usable[0].agent;
    throw validationError([
      {
        field: 'agent_name',
        message:
          usable.length === 0
            ? 'No agent is available to you'
            : 'agent_name is required when more than one agent is available',
      },
    ]);
  }
  try {
    return await agentForUse(s, principal, name);
  } catch (e) {
    // A missing agent is a bad request; an existing one the caller may not use is 403.
    if (e instanceof DomainError && e.kind === 'not-found') throw agentError();
    if (e instanceof DomainError && e.kind === 'forbidden') throw forbidden(AGENT_REFUSED);
    throw e;
  }
}

/** A request checked against everything it can fail on before work starts: agent, access, session. */
export interface Admitted {
  request: CompletionRequest;
  agent: AgentDoc;
  sessionId: string | undefined;
  /** The caller's session as read at admission: its recent messages are the turn's history. */
  session: Stored<SessionDoc> | undefined;
  /** The attached files, the caller's own. */
  attachments: FileDoc[];
  /**
   * What the caller's knowledge searches are limited to: the request's filter (index_filter_expression), and the groups
   * they read as.
   */
  scope: KnowledgeScope;
  /** Absent for the Core API. */
  facade?: Facade | undefined;
  /** Headers the run adds to the answer (Svc-Budget once the model call's cost is reserved). */
  headers: Record<string, string>;
}

/** The caller's own attached files; 400 ValidationError for one that does not exist or is someone else's. */
async function attachedFiles(
  s: CompletionDeps,
  principal: Principal,
  objectIds: readonly string[] | undefined,
): Promise<FileDoc[]> {
  const files = await Promise.all((objectIds ?? []).map((id) => s.files.find(principal.upn, id)));
  const found = files.filter((f) => f !== undefined);
  const missing = files.findIndex((f) => f === undefined);
  if (missing >= 0)
    throw validationError([{ field: 'attachments', message: `Attachment ${objectIds?.[missing]} not found` }]);
  return found;
}

/** The value of a check run side by side with others; what it failed with when it failed. */
function fulfilled<T>(result: PromiseSettledResult<T>): T {
  if (result.status === 'rejected') throw result.reason;
  return result.value;
}

/**
 * Resolves the agent and checks the caller's access, session and attachments (side by side); throws the
 * 4xx of the first that fails, in that order. `facade`: what a facade adds to the request (none for the Core API).
 */
export async function admit(
  s: CompletionDeps,
  principal: Principal,
  request: CompletionRequest,
  options: { facade?: Facade | undefined } = {},
): Promise<Admitted> {
  const filter = parseFilter(request.settings?.agent_parameters?.index_filter_expression);
  const sessionId = request.session_id?.toLowerCase();
  const checks = await Promise.allSettled([
    resolveAgent(s, principal, request.agent_name),
    sessionId ? s.conversations.get(principal.upn, sessionId) : undefined,
    attachedFiles(s, principal, request.attachments),
    s.directory.readerGroups(principal),
  ]);
  const agent = fulfilled(checks[0]);
  const session = fulfilled(checks[1]);
  const attachments = fulfilled(checks[2]);
  const readers = fulfilled(checks[3]);
  return {
    request: { ...request, agent_name: agent.name },
    agent,
    sessionId,
    session,
    attachments,
    scope: { filter, readers },
    facade: options.facade,
    headers: {},
  };
}
