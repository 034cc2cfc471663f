// Agent, model, file and daily reports, each from store aggregates.
import { activityBy, usageTotals } from './activity.js';
import { eq, num, present, ratio, str, type Sources } from './data.js';
import type { Period } from './request.js';

const RESPONSE = eq('sender', 'Assistant');
const agentFilter = (agent: string | undefined) => (agent ? [eq('agent_name', agent)] : []);

/**
 * AnalyticsOverview, from the usage records (docs/analytics.md): conversations (distinct sessions), tokens,
 * users, agents and models as the token dashboard counts them; the mean completion time; the distinct tools run.
 */
export async function overview(src: Sources, agent: string | undefined) {
  const [totals, tools] = await Promise.all([
    usageTotals(src, agentFilter(agent)),
    src.toolRuns.one(agentFilter(agent), { tools: { fn: 'countDistinct', field: 'tool_name' } }),
  ]);
  return {
    total_conversations: totals.conversations,
    total_tokens: totals.tokens,
    active_users: totals.users,
    total_agents: totals.agents,
    avg_response_time_ms: ratio(totals.duration, totals.requests),
    total_tools: num(tools.tools),
    total_models: totals.models,
  };
}

/**
 * AnalyticsAgentSummary for every agent with usage records or responses (or just `only`), sorted by name.
 * Users, conversations, tokens, times and errors are the agent's activity (activity.ts); rounds are its
 * responses per conversation; tools are the tool runs per response, the five run most named.
 */
export async function agentSummaries(src: Sources, only?: string) {
  const f = agentFilter(only);
  const [activity, responses, files, tools] = await Promise.all([
    activityBy(src, 'agent_name', f),
    src.messages.group([RESPONSE, ...f], ['agent_name'], { responses: { fn: 'count' } }),
    src.files.group(f, ['agent_name'], { files: { fn: 'count' } }),
    src.toolRuns.group(f, ['agent_name', 'tool_name'], { runs: { fn: 'count' } }),
  ]);
  const toolsOf = (agent: string) =>
    tools
      .filter((t) => str(t.agent_name) === agent)
      .map((t) => ({ tool: str(t.tool_name), runs: num(t.runs) }))
      .sort((a, b) => b.runs - a.runs || a.tool.localeCompare(b.tool));
  const responded = new Map(responses.map((r) => [str(r.agent_name), num(r.responses)]));
  const fileCounts = new Map(files.map((r) => [str(r.agent_name), num(r.files)]));
  const names = [...new Set([...activity.keys(), ...responded.keys()])].filter((n) => n !== '').sort();
  return names.map((agent_name) => {
    const a = activity.get(agent_name);
    const conversations = a?.conversations ?? 0;
    const answered = responded.get(agent_name) ?? 0;
    return {
      agent_name,
      unique_users: a?.others ?? 0,
      total_conversations: conversations,
      total_tokens: a?.tokens ?? 0,
      avg_tokens_per_session: ratio(a?.tokens ?? 0, conversations),
      avg_tools_used: ratio(
        toolsOf(agent_name).reduce((n, t) => n + t.runs, 0),
        answered,
      ),
      avg_response_time_ms: ratio(a?.duration ?? 0, a?.requests ?? 0),
      p95_response_time_ms: null,
      error_rate: ratio(a?.failed ?? 0, a?.requests ?? 0),
      most_used_tools: toolsOf(agent_name)
        .slice(0, 5)
        .map((t) => t.tool),
      avg_files_per_conversation: ratio(fileCounts.get(agent_name) ?? 0, conversations),
      avg_rounds_per_conversation: ratio(answered, conversations),
    };
  });
}

/** AnalyticsFileSummary of one agent, from file records only (never content). */
export async function agentFiles(src: Sources, agent: string) {
  const f = [eq('agent_name', agent)];
  const [totals, conversations, types, sizes] = await Promise.all([
    src.files.one(f, { files: { fn: 'count' }, bytes: { fn: 'sum', field: 'size' } }),
    src.files.one([...f, present('session_id')], { sessions: { fn: 'countDistinct', field: 'session_id' } }),
    src.files.group(f, ['content_type'], { n: { fn: 'count' } }),
    src.files.values(f, 'size'),
  ]);
  const sorted = sizes.sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const upper = sorted[mid] ?? 0;
  const median = sorted.length % 2 ? upper : ((sorted[mid - 1] ?? upper) + upper) / 2;
  const files = num(totals.files);
  return {
    total_files: files,
    total_storage_bytes: num(totals.bytes),
    avg_file_size_bytes: ratio(num(totals.bytes), files),
    median_file_size_bytes: median,
    avg_files_per_conversation: ratio(files, num(conversations.sessions)),
    file_type_distribution: Object.fromEntries(types.map((t) => [str(t.content_type), num(t.n)])),
  };
}

/** AnalyticsModelSummary per model deployment, from token usage records. */
export async function models(src: Sources) {
  const [usage, failures] = await Promise.all([
    src.usage.group([], ['model_deployment_name'], {
      tokens: { fn: 'sum', field: 'total_tokens' },
      agents: { fn: 'countDistinct', field: 'agent_name' },
      operations: { fn: 'count' },
      duration: { fn: 'sum', field: 'duration_ms' },
      cost: { fn: 'sum', field: 'cost' },
    }),
    src.usage.group([eq('status', 'Failed')], ['model_deployment_name'], { failed: { fn: 'count' } }),
  ]);
  const failed = new Map(failures.map((f) => [str(f.model_deployment_name), num(f.failed)]));
  return usage
    .map((m) => {
      const name = str(m.model_deployment_name) || 'Unknown';
      const operations = num(m.operations);
      return {
        model_name: name,
        deployment_name: name,
        total_tokens: num(m.tokens),
        agent_count: num(m.agents),
        usage_count: num(m.agents),
        avg_response_time_ms: ratio(num(m.duration), operations),
        avg_tokens_per_completion: ratio(num(m.tokens), operations),
        cost_per_request: ratio(num(m.cost), operations),
        error_rate: ratio(failed.get(str(m.model_deployment_name)) ?? 0, operations),
      };
    })
    .sort((a, b) => b.total_tokens - a.total_tokens || a.model_name.localeCompare(b.model_name));
}

/**
 * A daily series per agent over every day of the period, zero-filled: responses (messages) or users (usage records).
 */
async function dailyPerAgent(
  src: Sources,
  period: Period,
  { agent, measure }: { agent: string | undefined; measure: 'responses' | 'users' },
) {
  const rows =
    measure === 'responses'
      ? await src.messages.group([RESPONSE, ...agentFilter(agent)], ['day', 'agent_name'], { n: { fn: 'count' } })
      : await src.usage.group(agentFilter(agent), ['day', 'agent_name'], { n: { fn: 'countDistinct', field: 'upn' } });
  const agents = agent ? [agent] : [...new Set(rows.map((r) => str(r.agent_name)))].sort();
  const counts = new Map(rows.map((r) => [`${str(r.day)}|${str(r.agent_name)}`, num(r.n)]));
  return period.days.map((date) => ({
    date,
    agent_counts: Object.fromEntries(agents.map((a) => [a, counts.get(`${date}|${a}`) ?? 0])),
  }));
}

export const dailyMessages = (src: Sources, period: Period, agent: string | undefined) =>
  dailyPerAgent(src, period, { agent, measure: 'responses' });
export const dailyUsers = (src: Sources, period: Period, agent: string | undefined) =>
  dailyPerAgent(src, period, { agent, measure: 'users' });

/** AnalyticsDailyActiveUserCount: distinct users with a completion (usage record), every day of the period. */
export async function dailyActiveUsers(src: Sources, period: Period, agent: string | undefined) {
  const rows = await src.usage.group(agentFilter(agent), ['day'], { n: { fn: 'countDistinct', field: 'upn' } });
  const counts = new Map(rows.map((r) => [str(r.day), num(r.n)]));
  return period.days.map((date) => ({ date, count: counts.get(date) ?? 0 }));
}

/**
 * AnalyticsTokenUsageDashboard: the overview's totals, and the agents', users' and models' figures of the other
 * reports.
 */
export async function tokenDashboard(src: Sources, agent: string | undefined) {
  const f = agentFilter(agent);
  const [totals, agents, users, modelRows] = await Promise.all([
    usageTotals(src, f),
    activityBy(src, 'agent_name', f),
    activityBy(src, 'upn', f),
    src.usage.group(f, ['model_deployment_name'], {
      tokens: { fn: 'sum', field: 'total_tokens' },
      agents: { fn: 'countDistinct', field: 'agent_name' },
    }),
  ]);
  const byTokens = <T extends { total_tokens: number }>(list: T[], name: (t: T) => string) =>
    list.sort((a, b) => b.total_tokens - a.total_tokens || name(a).localeCompare(name(b)));
  return {
    total_tokens: totals.tokens,
    total_users: totals.users,
    total_agents: totals.agents,
    total_models: totals.models,
    agents: byTokens(
      [...agents].map(([agent_name, a]) => ({
        agent_name,
        total_tokens: a.tokens,
        unique_users: a.others,
        total_conversations: a.conversations,
      })),
      (a) => a.agent_name,
    ),
    users: byTokens(
      [...users].map(([username, u]) => ({
        username,
        total_tokens: u.tokens,
        total_conversations: u.conversations,
        operation_count: u.requests,
      })),
      (u) => u.username,
    ),
    models: byTokens(
      modelRows.map((m) => ({
        model_deployment_name: str(m.model_deployment_name) || 'Unknown',
        total_tokens: num(m.tokens),
        agent_count: num(m.agents),
      })),
      (m) => m.model_deployment_name,
    ),
  };
}

/** AnalyticsToolSummary per tool (all agents, or one): how many times each tool ran, most used first. */
export async function toolSummaries(src: Sources, agent: string | undefined) {
  const rows = await src.toolRuns.group(agentFilter(agent), ['tool_name'], { runs: { fn: 'count' } });
  return rows
    .map((r) => ({ tool_name: str(r.tool_name), usage_count: num(r.runs) }))
    .sort((a, b) => b.usage_count - a.usage_count || a.tool_name.localeCompare(b.tool_name));
}

/**
 * AgentToolCombinations: for each set of tools one completion of the agent ran together (`a + b`), how many completions
 * ran it.
 */
export async function toolCombinations(src: Sources, agent: string) {
  const rows = await src.toolRuns.group([eq('agent_name', agent)], ['operation_id', 'tool_name'], {
    runs: { fn: 'count' },
  });
  const byOperation = new Map<string, Set<string>>();
  for (const r of rows) {
    const set = byOperation.get(str(r.operation_id)) ?? new Set<string>();
    set.add(str(r.tool_name));
    byOperation.set(str(r.operation_id), set);
  }
  const combinations: Record<string, number> = {};
  for (const set of byOperation.values()) {
    const key = [...set].sort().join(' + ');
    combinations[key] = (combinations[key] ?? 0) + 1;
  }
  return combinations;
}
