// Token usage records: one per completion, written once (idempotent on the operation id), for analytics.
import { ownerKey, type Principal } from '../auth/principal.js';
import { dayOf } from '../conversations/conversations.js';
import { ConflictError, PreconditionFailedError, type Container, type Doc } from '../store/types.js';

/** How a call came in: the Core API, a facade over the completion pipeline (OpenAI, MCP, A2A), or a realtime call. */
export type Protocol = 'core' | 'openai' | 'mcp' | 'a2a' | 'realtime';

export interface UsageDoc extends Doc {
  operation_id: string;
  session_id: string | null;
  upn: string;
  user_id: string;
  agent_name: string;
  model_deployment_name: string;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  cost: number;
  timestamp: string;
  day: string;
  duration_ms: number;
  /**
   * Failed records (the model call failed) carry no tokens; analytics derives error rates from them.
   * Cancelled ones (the client went away mid-stream) carry the tokens streamed until then.
   */
  /** Blocked: a shield refused the prompt or the answer (`shielding` says which and where). */
  status: 'Completed' | 'Failed' | 'Cancelled' | 'Blocked';
  error_code?: string;
  /** Absent in records of earlier releases: the Core API. */
  protocol?: Protocol;
  /** The agent's cost center when it has one: what charge-back groups by. */
  cost_center?: string;
  /** The currency of `cost` when the model's `pricing` names one. */
  currency?: string;
  shielding?: { plugin_name: string; stage: 'pre' | 'post'; verdict: 'blocked' };
}

declare module '../store/types.js' {
  interface StoredDocs {
    usage: UsageDoc;
  }
}

/**
 * Writes the operation's record once. A completed record replaces a failed one (a retry that succeeded),
 * never the other way round.
 */
export async function recordUsage(container: Container<UsageDoc>, doc: UsageDoc): Promise<void> {
  try {
    await container.create(doc);
  } catch (e) {
    if (!(e instanceof ConflictError)) throw e;
    const existing = await container.read(doc.pk, doc.id);
    if (existing?.status === 'Failed' && doc.status === 'Completed') {
      await container.replace(doc, { ifMatch: existing._etag }).catch((err: unknown) => {
        if (!(err instanceof PreconditionFailedError)) throw err;
      });
    }
  }
}

/** Which operation a usage record is of: its session and agent, the model that answered, when it started and ended. */
export interface UsageOf {
  operationId: string;
  sessionId: string | undefined;
  agentName: string;
  deployment: string;
  /** When it ended (ISO). */
  at: string;
  /** When it started (epoch ms). */
  started: number;
}

/** A usage record of an operation without its counts yet (zero tokens and cost), ended now. */
export function usageRecord(
  principal: Principal,
  { operationId, sessionId, agentName, deployment, at, started }: UsageOf,
) {
  return {
    id: operationId,
    pk: ownerKey(principal.upn),
    operation_id: operationId,
    session_id: sessionId ?? null,
    upn: ownerKey(principal.upn),
    user_id: principal.id,
    agent_name: agentName,
    model_deployment_name: deployment,
    prompt_tokens: 0,
    completion_tokens: 0,
    total_tokens: 0,
    cost: 0,
    timestamp: at,
    day: dayOf(at),
    duration_ms: Date.now() - started,
  };
}
