// Agent, model, file and daily reports, each from store aggregates.
import { eq, num, present, ratio, str, type Sources } from './data.js';
import type { Period } from './request.js';

const RESPONSE = eq('sender', 'Assistant');
const agentFilter = (agent: string | undefined) => (agent ? [eq('agent_name', agent)] : []);

/** AnalyticsOverview. Its avg_response_time_ms, total_tools and total_models are 0 (the overview's fixed fields; the agent and model reports carry them). */
export async function overview(src: Sources, agent: string | undefined) {
  // Every turn writes a user message, so sessions and users with activity are counted over those (half the rows).
  const [activity, responses, tokens] = await Promise.all([
    src.messages.one(agent ? [RESPONSE, eq('agent_name', agent)] : [eq('sender', 'User')], { conversations: { fn: 'countDistinct', field: 'session_id' }, users: { fn: 'countDistinct', field: 'upn' } }),
    src.messages.one([RESPONSE, ...agentFilter(agent)], { agents: { fn: 'countDistinct', field: 'agent_name' }, n: { fn: 'count' } }),
    src.usage.one(agentFilter(agent), { tokens: { fn: 'sum', field: 'total_tokens' } }),
  ]);
  return {
    total_conversations: num(activity.conversations),
    total_tokens: num(tokens.tokens),
    active_users: num(activity.users),
    total_agents: agent ? (num(responses.n) > 0 ? 1 : 0) : num(responses.agents),
    avg_response_time_ms: 0,
    total_tools: 0,
    total_models: 0,
  };
}

/**
 * AnalyticsAgentSummary for every agent with responses or token records (or just `only`), sorted by name.
 * Fields other implementations leave unpopulated are computed where the data exists: avg_response_time_ms (operation
 * durations), error_rate (failed operations / operations), avg_files_per_conversation, and
 * avg_rounds_per_conversation (responses / conversations: every turn is one request and one response).
 * avg_tools_used is tool executions per response and most_used_tools the five tools run most (tool runs);
 * p95_response_time_ms stays null.
 */
export async function agentSummaries(src: Sources, only?: string) {
  const f = agentFilter(only);
  const [responses, usage, usageSessions, failures, files, tools] = await Promise.all([
    src.messages.group([RESPONSE, ...f], ['agent_name'], { responses: { fn: 'count' }, users: { fn: 'countDistinct', field: 'upn' }, conversations: { fn: 'countDistinct', field: 'session_id' } }),
    src.usage.group(f, ['agent_name'], { tokens: { fn: 'sum', field: 'total_tokens' }, operations: { fn: 'count' }, duration: { fn: 'sum', field: 'duration_ms' } }),
    src.usage.group([...f, present('session_id')], ['agent_name'], { sessions: { fn: 'countDistinct', field: 'session_id' } }),
    src.usage.group([...f, eq('status', 'Failed')], ['agent_name'], { failed: { fn: 'count' } }),
    src.files.group(f, ['agent_name'], { files: { fn: 'count' } }),
    src.toolRuns.group(f, ['agent_name', 'tool_name'], { runs: { fn: 'count' } }),
  ]);
  const toolsOf = (agent: string) =>
    tools
      .filter((t) => str(t.agent_name) === agent)
      .map((t) => ({ tool: str(t.tool_name), runs: num(t.runs) }))
      .sort((a, b) => b.runs - a.runs || a.tool.localeCompare(b.tool));
  const by = (rows: Record<string, unknown>[]) => new Map(rows.map((r) => [str(r.agent_name), r]));
  const [r, u, us, fl, fi] = [by(responses), by(usage), by(usageSessions), by(failures), by(files)];
  const names = [...new Set([...r.keys(), ...u.keys()])].filter((n) => n !== '').sort();
  return names.map((agent_name) => {
    const conversations = num(r.get(agent_name)?.conversations);
    const tokens = num(u.get(agent_name)?.tokens);
    const operations = num(u.get(agent_name)?.operations);
    const tokenSessions = num(us.get(agent_name)?.sessions);
    return {
      agent_name,
      unique_users: num(r.get(agent_name)?.users),
      total_conversations: conversations,
      total_tokens: tokens,
      avg_tokens_per_session: ratio(tokens, tokenSessions > 0 ? tokenSessions : conversations),
      avg_tools_used: ratio(
        toolsOf(agent_name).reduce((n, t) => n + t.runs, 0),
        num(r.get(agent_name)?.responses),
      ),
      avg_response_time_ms: ratio(num(u.get(agent_name)?.duration), operations),
      p95_response_time_ms: null,
      error_rate: ratio(num(fl.get(agent_name)?.failed), operations),
      most_used_tools: toolsOf(agent_name)
        .slice(0, 5)
        .map((t) => t.tool),
      avg_files_per_conversation: ratio(num(fi.get(agent_name)?.files), conversations),
      avg_rounds_per_conversation: ratio(num(r.get(agent_name)?.responses), conversations),
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
    src.files.values<number>(f, 'size'),
  ]);
  const sorted = sizes.sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const median = sorted.length === 0 ? 0 : sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
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

/** A daily series per agent over every day of the period, zero-filled. */
async function dailyPerAgent(src: Sources, period: Period, agent: string | undefined, measure: 'responses' | 'users') {
  const aggregate = measure === 'responses' ? ({ fn: 'count' } as const) : ({ fn: 'countDistinct', field: 'upn' } as const);
  const rows = await src.messages.group([RESPONSE, ...agentFilter(agent)], ['day', 'agent_name'], { n: aggregate });
  const agents = agent ? [agent] : [...new Set(rows.map((r) => str(r.agent_name)))].sort();
  const counts = new Map(rows.map((r) => [`${str(r.day)}|${str(r.agent_name)}`, num(r.n)]));
  return period.days.map((date) => ({ date, agent_counts: Object.fromEntries(agents.map((a) => [a, counts.get(`${date}|${a}`) ?? 0])) }));
}

export const dailyMessages = (src: Sources, period: Period, agent: string | undefined) => dailyPerAgent(src, period, agent, 'responses');
export const dailyUsers = (src: Sources, period: Period, agent: string | undefined) => dailyPerAgent(src, period, agent, 'users');

/** AnalyticsDailyActiveUserCount: distinct UPNs on messages, every day of the period. */
export async function dailyActiveUsers(src: Sources, period: Period, agent: string | undefined) {
  const rows = await src.messages.group(agentFilter(agent), ['day'], { n: { fn: 'countDistinct', field: 'upn' } });
  const counts = new Map(rows.map((r) => [str(r.day), num(r.n)]));
  return period.days.map((date) => ({ date, count: counts.get(date) ?? 0 }));
}

/** AnalyticsTokenUsageDashboard, from token usage records only. */
export async function tokenDashboard(src: Sources, agent: string | undefined) {
  const f = agentFilter(agent);
  const sessions = present('session_id');
  const [totals, agents, agentSessions, users, userSessions, modelRows] = await Promise.all([
    src.usage.one(f, { tokens: { fn: 'sum', field: 'total_tokens' }, users: { fn: 'countDistinct', field: 'upn' }, agents: { fn: 'countDistinct', field: 'agent_name' }, models: { fn: 'countDistinct', field: 'model_deployment_name' } }),
    src.usage.group(f, ['agent_name'], { tokens: { fn: 'sum', field: 'total_tokens' }, users: { fn: 'countDistinct', field: 'upn' } }),
    src.usage.group([...f, sessions], ['agent_name'], { sessions: { fn: 'countDistinct', field: 'session_id' } }),
    src.usage.group(f, ['upn'], { tokens: { fn: 'sum', field: 'total_tokens' }, operations: { fn: 'countDistinct', field: 'operation_id' } }),
    src.usage.group([...f, sessions], ['upn'], { sessions: { fn: 'countDistinct', field: 'session_id' } }),
    src.usage.group(f, ['model_deployment_name'], { tokens: { fn: 'sum', field: 'total_tokens' }, agents: { fn: 'countDistinct', field: 'agent_name' } }),
  ]);
  const sessionsOf = (rows: Record<string, unknown>[], key: string) => new Map(rows.map((r) => [str(r[key]), num(r.sessions)]));
  const as = sessionsOf(agentSessions, 'agent_name');
  const usr = sessionsOf(userSessions, 'upn');
  const byTokens = <T extends { total_tokens: number }>(list: T[], name: (t: T) => string) => list.sort((a, b) => b.total_tokens - a.total_tokens || name(a).localeCompare(name(b)));
  return {
    total_tokens: num(totals.tokens),
    total_users: num(totals.users),
    total_agents: num(totals.agents),
    total_models: num(totals.models),
    agents: byTokens(agents.map((a) => ({ agent_name: str(a.agent_name), total_tokens: num(a.tokens), unique_users: num(a.users), total_conversations: as.get(str(a.agent_name)) ?? 0 })), (a) => a.agent_name),
    users: byTokens(users.map((u) => ({ username: str(u.upn), total_tokens: num(u.tokens), total_conversations: usr.get(str(u.upn)) ?? 0, operation_count: num(u.operations) })), (u) => u.username),
    models: byTokens(modelRows.map((m) => ({ model_deployment_name: str(m.model_deployment_name) || 'Unknown', total_tokens: num(m.tokens), agent_count: num(m.agents) })), (m) => m.model_deployment_name),
  };
}

/** AnalyticsToolSummary per tool (all agents, or one): how many times each tool ran, most used first. */
export async function toolSummaries(src: Sources, agent: string | undefined) {
  const rows = await src.toolRuns.group(agentFilter(agent), ['tool_name'], { runs: { fn: 'count' } });
  return rows.map((r) => ({ tool_name: str(r.tool_name), usage_count: num(r.runs) })).sort((a, b) => b.usage_count - a.usage_count || a.tool_name.localeCompare(b.tool_name));
}

/** AgentToolCombinations: for each set of tools one completion of the agent ran together (`a + b`), how many completions ran it. */
export async function toolCombinations(src: Sources, agent: string) {
  const rows = await src.toolRuns.group([eq('agent_name', agent)], ['operation_id', 'tool_name'], { runs: { fn: 'count' } });
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
