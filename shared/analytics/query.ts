// Answers an AnalyticsRequest: resolves filters, checks each domain provider's own action for the
// caller, and builds the AnalyticsResponse of the request type.
import type { Principal } from '../auth/principal.js';
import { thresholds } from './abuse.js';
import {
  agentFiles,
  agentSummaries,
  dailyActiveUsers,
  dailyMessages,
  dailyUsers,
  models,
  overview,
  tokenDashboard,
  toolCombinations,
  toolSummaries,
} from './agent-reports.js';
import { budgetStatus, costBy } from './cost-reports.js';
import { sources } from './data.js';
import { resolve, type AnalyticsRequest, type RequestType } from './request.js';
import {
  abuseIndicators,
  abuseRiskScore,
  activityTimeline,
  allUsers,
  topUsers,
  userAnomalies,
  userSummary,
} from './user-reports.js';
import type { Authorizer } from '../auth/authorizer.js';
import type { Budgets } from '../completions/budgets.js';
import type { Config } from '../config.js';
import type { AppSettings } from '../providers/settings.js';
import type { DocumentStore } from '../store/types.js';

/** What this module uses of the service (the hosts pass the whole of it). */
export interface QueryDeps {
  readonly authorizer: Authorizer;
  readonly budgets: Budgets;
  readonly config: Config;
  readonly settings: AppSettings;
  readonly store: DocumentStore;
}

/** The domain providers a request type reads: conversations (sessions, messages, usage) and context (files). */
function domains(type: RequestType): ('conversation' | 'context')[] {
  if (type === 'AgentFiles') return ['context'];
  if (type === 'AgentSummary' || type === 'AllAgents') return ['conversation', 'context'];
  return ['conversation'];
}

const ACTIONS = {
  conversation: 'Svc.Conversation/conversationAnalytics/read',
  context: 'Svc.Context/contextAnalytics/read',
} as const;

export async function runAnalytics(s: QueryDeps, principal: Principal, body: AnalyticsRequest) {
  const r = resolve(body);
  const instance = `/instances/${s.config.instanceId}`;
  // Each domain provider checks its own action with the caller's identity.
  for (const domain of domains(r.type)) await s.authorizer.require(principal, ACTIONS[domain], instance);

  const src = sources(
    {
      sessions: s.store.container('sessions'),
      usage: s.store.container('usage'),
      files: s.store.container('files'),
      toolRuns: s.store.container('toolRuns'),
    },
    r.period,
  );
  const t = () => thresholds(s.settings);
  const agent = r.agent;
  const user = r.user ?? '';
  const f = body.filters;
  let data: unknown;
  switch (r.type) {
    case 'Overview':
      data = await overview(src, agent);
      break;
    case 'AllAgents':
      data = await agentSummaries(src);
      break;
    case 'AgentSummary':
      data = (await agentSummaries(src, agent))[0] ?? emptySummary(agent ?? '');
      break;
    case 'AgentToolCombinations':
      data = await toolCombinations(src, agent ?? '');
      break;
    case 'AgentFiles':
      data = await agentFiles(src, agent ?? '');
      break;
    case 'Tools':
      data = await toolSummaries(src, agent);
      break;
    case 'Models':
      data = await models(src);
      break;
    case 'TopUsers':
      data = await topUsers(src, await t(), {
        top: f.top_count,
        sortBy: f.sort_by,
        abuse: body.options.include_abuse_detection,
      });
      break;
    case 'UserSummary':
      data = await userSummary(src, user);
      break;
    case 'UserActivityTimeline':
      data = await activityTimeline(src, user);
      break;
    case 'DailyMessageCountsPerAgent':
      data = await dailyMessages(src, r.period, agent);
      break;
    case 'DailyUserCountsPerAgent':
      data = await dailyUsers(src, r.period, agent);
      break;
    case 'AllUsers':
      data = await allUsers(src);
      break;
    case 'UserAbuseRiskScore':
      data = await abuseRiskScore(src, await t(), user);
      break;
    case 'UserAbuseIndicators':
      data = await abuseIndicators(src, await t(), user);
      break;
    case 'UserAnomalies':
      data = await userAnomalies(src, await t(), r.user);
      break;
    case 'DailyActiveUsers':
      data = await dailyActiveUsers(src, r.period, agent);
      break;
    case 'TokenUsageDashboard':
      data = await tokenDashboard(src, agent);
      break;
    case 'CostByCostCenter':
      data = await costBy(src, r.period, { group: 'cost_center', agent, user: r.user });
      break;
    case 'CostByAgent':
      data = await costBy(src, r.period, { group: 'agent_name', agent, user: r.user });
      break;
    case 'CostByUser':
      data = await costBy(src, r.period, { group: 'upn', agent, user: r.user, top: f.top_count });
      break;
    case 'CostByModel':
      data = await costBy(src, r.period, { group: 'model_deployment_name', agent, user: r.user });
      break;
    case 'BudgetStatus':
      data = await budgetStatus(src, r.period, { budgets: s.budgets, agent });
      break;
  }
  return {
    object_id: `${instance}/providers/Svc.Analytics/analytics/query`,
    is_success: true,
    resource: { request_type: r.number, generated_at_utc: new Date().toISOString(), data },
  };
}

/** An agent with no activity in the period still has a summary, all zero. */
function emptySummary(agent_name: string) {
  return {
    agent_name,
    unique_users: 0,
    total_conversations: 0,
    total_tokens: 0,
    avg_tokens_per_session: 0,
    avg_tools_used: 0,
    avg_response_time_ms: 0,
    p95_response_time_ms: null,
    error_rate: 0,
    most_used_tools: [],
    avg_files_per_conversation: 0,
    avg_rounds_per_conversation: 0,
  };
}
