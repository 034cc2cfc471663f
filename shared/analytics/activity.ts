// Who used what, and how much: the figures several reports share, each defined once over the usage records
// (one per completion, whatever its protocol, session or outcome; docs/analytics.md). The reports read them
// from here, so the overview, the agent and user reports and the token dashboard agree on the same data.
import type { Filter } from '../store/types.js';
import { num, present, str, type Sources } from './data.js';

/** Figures of one agent or one user over the period. */
export interface Activity {
  /** Completions (usage records), failed ones included. */
  requests: number;
  /** Completions that failed (the model call failed). */
  failed: number;
  tokens: number;
  /** Summed duration of the completions, ms. */
  duration: number;
  /** Distinct sessions the completions ran in (sessionless ones are no conversation). */
  conversations: number;
  /** Distinct users (for an agent) or agents (for a user). */
  others: number;
  /** The latest completion's time. */
  last: string | null;
}

const TOTALS = {
  tokens: { fn: 'sum', field: 'total_tokens' },
  requests: { fn: 'count' },
  duration: { fn: 'sum', field: 'duration_ms' },
  last: { fn: 'max', field: 'timestamp' },
} as const;

/** Activity per agent (`by` agent_name) or per user (`by` upn), over the usage records matching `where`. */
export async function activityBy(
  src: Sources,
  by: 'agent_name' | 'upn',
  where: Filter[],
): Promise<Map<string, Activity>> {
  const other = by === 'agent_name' ? 'upn' : 'agent_name';
  const [totals, sessions, failures] = await Promise.all([
    src.usage.group(where, [by], { ...TOTALS, others: { fn: 'countDistinct', field: other } }),
    src.usage.group([...where, present('session_id')], [by], {
      conversations: { fn: 'countDistinct', field: 'session_id' },
    }),
    src.usage.group([...where, { field: 'status', op: 'eq', value: 'Failed' }], [by], { failed: { fn: 'count' } }),
  ]);
  const conversations = new Map(sessions.map((r) => [str(r[by]), num(r.conversations)]));
  const failed = new Map(failures.map((r) => [str(r[by]), num(r.failed)]));
  return new Map(
    totals.map((r) => {
      const key = str(r[by]);
      const activity: Activity = {
        requests: num(r.requests),
        failed: failed.get(key) ?? 0,
        tokens: num(r.tokens),
        duration: num(r.duration),
        conversations: conversations.get(key) ?? 0,
        others: num(r.others),
        last: str(r.last) || null,
      };
      return [key, activity];
    }),
  );
}

/**
 * The period's totals over the usage records matching `where`: what the overview and the token dashboard both state.
 */
export async function usageTotals(src: Sources, where: Filter[]) {
  const [totals, sessions] = await Promise.all([
    src.usage.one(where, {
      ...TOTALS,
      users: { fn: 'countDistinct', field: 'upn' },
      agents: { fn: 'countDistinct', field: 'agent_name' },
      models: { fn: 'countDistinct', field: 'model_deployment_name' },
    }),
    src.usage.one([...where, present('session_id')], { conversations: { fn: 'countDistinct', field: 'session_id' } }),
  ]);
  return {
    tokens: num(totals.tokens),
    requests: num(totals.requests),
    duration: num(totals.duration),
    users: num(totals.users),
    agents: num(totals.agents),
    models: num(totals.models),
    conversations: num(sessions.conversations),
  };
}
