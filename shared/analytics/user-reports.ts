// User reports and abuse detection, from store aggregates and per-user records.
import type { UsageDoc } from '../completions/usage.js';
import { anomalies, indicatorReport, indicators, riskScore, type Thresholds } from './abuse.js';
import { eq, num, present, ratio, str, type Sources } from './data.js';

const USER_MESSAGE = eq('sender', 'User');
const WEEKDAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];

/** One user's usage records in the period, oldest first: the input of abuse detection and timelines. */
const recordsOf = (src: Sources, upn: string) => src.usage.list<UsageDoc>(upn, []);

interface UserTotals {
  username: string;
  requests: number;
  sessions: number;
  tokens: number;
  operations: number;
  failed: number;
  duration: number;
  agents: number;
  lastActivity: string | null;
}

/** Per-user figures for every user active in the period, from grouped aggregates. */
async function userTotals(src: Sources): Promise<UserTotals[]> {
  const [requests, usage, failures, sessions] = await Promise.all([
    src.messages.group([USER_MESSAGE], ['upn'], { requests: { fn: 'count' }, sessions: { fn: 'countDistinct', field: 'session_id' } }),
    src.usage.group([], ['upn'], { tokens: { fn: 'sum', field: 'total_tokens' }, operations: { fn: 'count' }, duration: { fn: 'sum', field: 'duration_ms' }, agents: { fn: 'countDistinct', field: 'agent_name' } }),
    src.usage.group([eq('status', 'Failed')], ['upn'], { failed: { fn: 'count' } }),
    src.sessions.group([], ['upn'], { last: { fn: 'max', field: 'created_on' } }),
  ]);
  const by = (rows: Record<string, unknown>[]) => new Map(rows.map((r) => [str(r.upn), r]));
  const [q, u, f, s] = [by(requests), by(usage), by(failures), by(sessions)];
  return [...new Set([...q.keys(), ...u.keys()])].map((username) => ({
    username,
    requests: num(q.get(username)?.requests),
    sessions: num(q.get(username)?.sessions),
    tokens: num(u.get(username)?.tokens),
    operations: num(u.get(username)?.operations),
    failed: num(f.get(username)?.failed),
    duration: num(u.get(username)?.duration),
    agents: num(u.get(username)?.agents),
    lastActivity: s.get(username)?.last === undefined ? null : str(s.get(username)?.last) || null,
  }));
}

/** AnalyticsTopUserSummary list; avg_response_time_ms, error_rate and agents_used are computed. */
export async function topUsers(src: Sources, t: Thresholds, opts: { top: number; sortBy: 'Requests' | 'Tokens' | 'Sessions' | 'RiskScore'; abuse: boolean }) {
  const users = await userTotals(src);
  const byRequests = [...users].sort((a, b) => b.requests - a.requests || a.username.localeCompare(b.username));
  const scored = new Map<string, ReturnType<typeof indicators>>();
  const score = async (u: UserTotals) => {
    if (!scored.has(u.username)) scored.set(u.username, indicators(await recordsOf(src, u.username), t));
    return scored.get(u.username) ?? [];
  };
  let ranked: UserTotals[];
  if (opts.sortBy === 'RiskScore') {
    // Risk is evaluated for the top 100 users by requests, as the anomaly evaluation is.
    const candidates = byRequests.slice(0, 100);
    const risks = new Map<string, number>();
    for (const u of candidates) risks.set(u.username, riskScore(await score(u)).risk_score);
    ranked = candidates.sort((a, b) => (risks.get(b.username) ?? 0) - (risks.get(a.username) ?? 0) || b.requests - a.requests);
  } else {
    const key = { Requests: (u: UserTotals) => u.requests, Tokens: (u: UserTotals) => u.tokens, Sessions: (u: UserTotals) => u.sessions }[opts.sortBy];
    ranked = [...users].sort((a, b) => key(b) - key(a) || a.username.localeCompare(b.username));
  }
  const top = ranked.slice(0, opts.top);
  const out = [];
  for (const u of top) {
    const found = opts.abuse ? await score(u) : undefined;
    out.push({
      username: u.username,
      upn: u.username,
      total_requests: u.requests,
      total_tokens: u.tokens,
      active_sessions: u.sessions,
      last_activity: u.lastActivity,
      ...(found ? { abuse_risk_score: riskScore(found).risk_score, abuse_indicators: indicatorReport(u.username, found) } : {}),
      avg_response_time_ms: ratio(u.duration, u.operations),
      error_rate: ratio(u.failed, u.operations),
      agents_used: u.agents,
    });
  }
  return out;
}

/** AnalyticsUserSummary of one user. */
export async function userSummary(src: Sources, upn: string) {
  const user = [eq('upn', upn)];
  const [messages, requests, days, hours, usage, failed] = await Promise.all([
    src.messages.one(user, { messages: { fn: 'count' }, sessions: { fn: 'countDistinct', field: 'session_id' }, days: { fn: 'countDistinct', field: 'day' } }),
    src.messages.one([...user, eq('sender', 'User')], { n: { fn: 'count' } }),
    src.messages.group(user, ['day'], { n: { fn: 'count' } }),
    src.messages.group(user, ['hour'], { n: { fn: 'count' } }),
    src.usage.one(user, { tokens: { fn: 'sum', field: 'total_tokens' }, operations: { fn: 'count' }, duration: { fn: 'sum', field: 'duration_ms' }, agents: { fn: 'countDistinct', field: 'agent_name' } }),
    src.usage.one([...user, eq('status', 'Failed')], { n: { fn: 'count' } }),
  ]);
  const peak = <K extends string>(rows: Record<string, unknown>[], key: K) => [...rows].sort((a, b) => num(b.n) - num(a.n) || str(a[key]).localeCompare(str(b[key])))[0]?.[key];
  const peakDay = peak(days, 'day');
  const peakHour = peak(hours, 'hour');
  const sessions = num(messages.sessions);
  return {
    username: upn,
    total_requests: num(requests.n),
    total_tokens: num(usage.tokens),
    total_sessions: sessions,
    active_days: num(messages.days),
    avg_session_length: ratio(num(messages.messages), sessions),
    avg_response_time_ms: ratio(num(usage.duration), num(usage.operations)),
    error_rate: ratio(num(failed.n), num(usage.operations)),
    agents_used: num(usage.agents),
    peak_usage_hour: peakHour === undefined ? null : num(peakHour),
    peak_usage_day: peakDay === undefined ? null : WEEKDAYS[new Date(`${str(peakDay)}T00:00:00Z`).getUTCDay()],
  };
}

/** AnalyticsUserActivityTimeline: one entry per operation in the token records, oldest first. */
export async function activityTimeline(src: Sources, upn: string) {
  const records = await recordsOf(src, upn);
  return {
    username: upn,
    entries: records.map((r) => ({ timestamp: r.timestamp, session_id: r.session_id, operation_id: r.operation_id, tokens: r.total_tokens, agent_name: r.agent_name })),
  };
}

/** AnalyticsUserSummarySimple for every user, sorted by username. */
export async function allUsers(src: Sources) {
  const [messages, usage, usageSessions] = await Promise.all([
    src.messages.group([], ['upn'], { sessions: { fn: 'countDistinct', field: 'session_id' }, messages: { fn: 'count' } }),
    src.usage.group([], ['upn'], { operations: { fn: 'countDistinct', field: 'operation_id' }, tokens: { fn: 'sum', field: 'total_tokens' } }),
    src.usage.group([present('session_id')], ['upn'], { sessions: { fn: 'countDistinct', field: 'session_id' } }),
  ]);
  const by = (rows: Record<string, unknown>[]) => new Map(rows.map((r) => [str(r.upn), r]));
  const [m, u, us] = [by(messages), by(usage), by(usageSessions)];
  return [...new Set([...m.keys(), ...u.keys()])].sort().map((username) => ({
    username,
    total_conversations: num(m.get(username)?.sessions) || num(us.get(username)?.sessions),
    total_messages: num(m.get(username)?.messages),
    operation_count: num(u.get(username)?.operations),
    total_tokens: num(u.get(username)?.tokens),
  }));
}

export async function abuseIndicators(src: Sources, t: Thresholds, upn: string) {
  return indicatorReport(upn, indicators(await recordsOf(src, upn), t));
}

/** Risk score and the per-factor scores (docs/api-decisions.md, Analytics). */
export async function abuseRiskScore(src: Sources, t: Thresholds, upn: string) {
  return { username: upn, ...riskScore(indicators(await recordsOf(src, upn), t)) };
}

/** UserAnomalies over the top 100 users by requests (or one user). */
export async function userAnomalies(src: Sources, t: Thresholds, only: string | undefined) {
  const users = only ? [only] : (await userTotals(src)).sort((a, b) => b.requests - a.requests || a.username.localeCompare(b.username)).slice(0, 100).map((u) => u.username);
  const out = [];
  for (const upn of users) out.push(...anomalies(upn, indicators(await recordsOf(src, upn), t)));
  return out;
}
