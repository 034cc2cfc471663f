// User reports and abuse detection, from store aggregates and per-user records.
import { anomalies, indicatorReport, indicators, riskScore, type Thresholds } from './abuse.js';
import { activityBy, type Activity } from './activity.js';
import { eq, num, ratio, str, type Sources } from './data.js';

const WEEKDAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];

/** One user's usage records in the period, oldest first: the input of abuse detection and timelines. */
const recordsOf = (src: Sources, upn: string) => src.usage.list(upn, []);

interface UserTotals extends Activity {
  username: string;
}

/** The activity of every user with completions in the period (activity.ts). */
async function userTotals(src: Sources): Promise<UserTotals[]> {
  return [...(await activityBy(src, 'upn', []))].map(([username, a]) => ({ username, ...a }));
}

/** AnalyticsTopUserSummary list; avg_response_time_ms, error_rate and agents_used are computed. */
export async function topUsers(
  src: Sources,
  t: Thresholds,
  opts: { top: number; sortBy: 'Requests' | 'Tokens' | 'Sessions' | 'RiskScore'; abuse: boolean },
) {
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
    ranked = candidates.sort(
      (a, b) => (risks.get(b.username) ?? 0) - (risks.get(a.username) ?? 0) || b.requests - a.requests,
    );
  } else {
    const key = {
      Requests: (u: UserTotals) => u.requests,
      Tokens: (u: UserTotals) => u.tokens,
      Sessions: (u: UserTotals) => u.conversations,
    }[opts.sortBy];
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
      active_sessions: u.conversations,
      last_activity: u.last,
      ...(found
        ? { abuse_risk_score: riskScore(found).risk_score, abuse_indicators: indicatorReport(u.username, found) }
        : {}),
      avg_response_time_ms: ratio(u.duration, u.requests),
      error_rate: ratio(u.failed, u.requests),
      agents_used: u.others,
    });
  }
  return out;
}

/**
 * AnalyticsUserSummary of one user: the user's activity (activity.ts), active days, and messages per session and peak
 * times from the messages.
 */
export async function userSummary(src: Sources, upn: string) {
  const user = [eq('upn', upn)];
  const [activity, days, messages, messageDays, hours] = await Promise.all([
    activityBy(src, 'upn', user),
    src.usage.one(user, { days: { fn: 'countDistinct', field: 'day' } }),
    src.messages.one(user, { messages: { fn: 'count' }, sessions: { fn: 'countDistinct', field: 'session_id' } }),
    src.messages.group(user, ['day'], { n: { fn: 'count' } }),
    src.messages.group(user, ['hour'], { n: { fn: 'count' } }),
  ]);
  const a = activity.get(upn);
  const peak = <K extends string>(rows: Record<string, unknown>[], key: K) =>
    [...rows].sort((x, y) => num(y.n) - num(x.n) || str(x[key]).localeCompare(str(y[key])))[0]?.[key];
  const peakDay = peak(messageDays, 'day');
  const peakHour = peak(hours, 'hour');
  return {
    username: upn,
    total_requests: a?.requests ?? 0,
    total_tokens: a?.tokens ?? 0,
    total_sessions: a?.conversations ?? 0,
    active_days: num(days.days),
    avg_session_length: ratio(num(messages.messages), num(messages.sessions)),
    avg_response_time_ms: ratio(a?.duration ?? 0, a?.requests ?? 0),
    error_rate: ratio(a?.failed ?? 0, a?.requests ?? 0),
    agents_used: a?.others ?? 0,
    peak_usage_hour: peakHour === undefined ? null : num(peakHour),
    peak_usage_day: peakDay === undefined ? null : WEEKDAYS[new Date(`${str(peakDay)}T00:00:00Z`).getUTCDay()],
  };
}

/** AnalyticsUserActivityTimeline: one entry per operation in the token records, oldest first. */
export async function activityTimeline(src: Sources, upn: string) {
  const records = await recordsOf(src, upn);
  return {
    username: upn,
    entries: records.map((r) => ({
      timestamp: r.timestamp,
      session_id: r.session_id,
      operation_id: r.operation_id,
      tokens: r.total_tokens,
      agent_name: r.agent_name,
    })),
  };
}

/** AnalyticsUserSummarySimple for every user with completions or messages, sorted by username. */
export async function allUsers(src: Sources) {
  const [activity, messages] = await Promise.all([
    activityBy(src, 'upn', []),
    src.messages.group([], ['upn'], { messages: { fn: 'count' } }),
  ]);
  const counted = new Map(messages.map((r) => [str(r.upn), num(r.messages)]));
  return [...new Set([...activity.keys(), ...counted.keys()])].sort().map((username) => ({
    username,
    total_conversations: activity.get(username)?.conversations ?? 0,
    total_messages: counted.get(username) ?? 0,
    operation_count: activity.get(username)?.requests ?? 0,
    total_tokens: activity.get(username)?.tokens ?? 0,
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
  const users = only
    ? [only]
    : (await userTotals(src))
        .sort((a, b) => b.requests - a.requests || a.username.localeCompare(b.username))
        .slice(0, 100)
        .map((u) => u.username);
  const out = [];
  for (const upn of users) out.push(...anomalies(upn, indicators(await recordsOf(src, upn), t)));
  return out;
}
