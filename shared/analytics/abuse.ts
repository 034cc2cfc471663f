// Abuse detection (docs/api-decisions.md, Analytics): indicators for one user over the period, the risk score and
// anomalies. Indicators are computed once from the user's usage records; the score is a pure function of them, so the
// two can never call each other.
import type { UsageDoc } from '../completions/usage.js';
import type { AppSettings } from '../providers/settings.js';

export const THRESHOLD_DEFAULTS = {
  HighRequestRateThreshold: 100,
  ExtremeRequestRateThreshold: 500,
  RapidFireThreshold: 20,
  RapidFireWindowMinutes: 1,
  ContinuousUsageHours: 20,
  MaxInactivityGapMinutes: 30,
  AgentHoppingThreshold: 10,
  AgentHoppingWindowMinutes: 60,
  HighErrorRateThreshold: 30,
} as const;
export type Thresholds = Record<keyof typeof THRESHOLD_DEFAULTS, number>;

const isThresholdName = (key: string): key is keyof Thresholds => key in THRESHOLD_DEFAULTS;
/** Every threshold's name: the keys of the defaults. */
const THRESHOLD_KEYS = Object.keys(THRESHOLD_DEFAULTS).filter(isThresholdName);

const THRESHOLD_PREFIX = 'svc:analytics:abusedetection:';
const THRESHOLD_NAMES = new Map(Object.keys(THRESHOLD_DEFAULTS).map((k) => [k.toLowerCase(), k]));

/**
 * Why a value may not be stored under a Svc:Analytics:AbuseDetection:* key: the key must be one the
 * detection reads and the value a positive number. Undefined for other keys.
 */
export function thresholdProblem(key: string, value: string): string | undefined {
  const id = key.toLowerCase();
  if (!id.startsWith(THRESHOLD_PREFIX)) return undefined;
  if (!THRESHOLD_NAMES.has(id.slice(THRESHOLD_PREFIX.length)))
    return `is not an abuse detection setting (those are ${[...THRESHOLD_NAMES.values()].join(', ')})`;
  const n = value.trim() === '' ? NaN : Number(value);
  return Number.isFinite(n) && n > 0 ? undefined : 'must be a positive number';
}

/** Thresholds from the Svc:Analytics:AbuseDetection:* configuration values, else the defaults. */
export async function thresholds(settings: AppSettings): Promise<Thresholds> {
  const found: Thresholds = { ...THRESHOLD_DEFAULTS };
  await Promise.all(
    THRESHOLD_KEYS.map(async (key) => {
      found[key] = await settings.getNumber(`Svc:Analytics:AbuseDetection:${key}`, THRESHOLD_DEFAULTS[key]);
    }),
  );
  return found;
}

export type Severity = 'Medium' | 'High' | 'Critical';
export type Category = 'Volume' | 'Temporal' | 'Behavioral' | 'Resource';

export interface Indicator {
  type: string;
  category: Category;
  /** Which risk factor it counts toward. */
  factor: keyof Factors;
  description: string;
  severity: Severity;
  detected_at: string;
  metrics: Record<string, number>;
}

export interface Factors {
  volume: number;
  token_consumption: number;
  error_rate: number;
  temporal: number;
  behavioral: number;
  resource_exhaustion: number;
}

const WEIGHTS: Factors = {
  volume: 0.25,
  token_consumption: 0.2,
  error_rate: 0.15,
  temporal: 0.15,
  behavioral: 0.15,
  resource_exhaustion: 0.1,
};
const FACTOR_NAMES = Object.keys(WEIGHTS).filter((k): k is keyof Factors => k in WEIGHTS);
const POINTS: Record<Severity, number> = { Medium: 10, High: 20, Critical: 20 };

/** Factor scores (High 20, Medium 10 per indicator, capped at 100) and their weighted sum (0 to 100). */
export function riskScore(indicators: readonly Indicator[]): { risk_score: number; factor_scores: Factors } {
  const factor_scores: Factors = {
    volume: 0,
    token_consumption: 0,
    error_rate: 0,
    temporal: 0,
    behavioral: 0,
    resource_exhaustion: 0,
  };
  for (const i of indicators) factor_scores[i.factor] = Math.min(100, factor_scores[i.factor] + POINTS[i.severity]);
  const weighted = FACTOR_NAMES.reduce((sum, k) => sum + WEIGHTS[k] * factor_scores[k], 0);
  return { risk_score: Math.round(weighted * 100) / 100, factor_scores };
}

const HOUR = 3_600_000;
const MINUTE = 60_000;

/** The most records falling in any window of `windowMs` (a sliding window over sorted times). */
function densest(times: readonly number[], windowMs: number): number {
  let best = 0;
  let lo = 0;
  times.forEach((time, hi) => {
    while (lo <= hi && time - (times[lo] ?? time) >= windowMs) lo++;
    best = Math.max(best, hi - lo + 1);
  });
  return best;
}

/** The most distinct agents used in any window of `windowMs`. */
function mostAgents(records: readonly { at: number; agent: string }[], windowMs: number): number {
  let best = 0;
  const counts = new Map<string, number>();
  let lo = 0;
  for (const r of records) {
    counts.set(r.agent, (counts.get(r.agent) ?? 0) + 1);
    for (let old = records[lo]; old && r.at - old.at >= windowMs; old = records[lo]) {
      const n = (counts.get(old.agent) ?? 1) - 1;
      if (n === 0) counts.delete(old.agent);
      else counts.set(old.agent, n);
      lo++;
    }
    best = Math.max(best, counts.size);
  }
  return best;
}

/** The longest stretch of activity with no gap longer than `gapMs`, in ms. */
function longestRun(times: readonly number[], gapMs: number): number {
  let best = 0;
  let start = times[0] ?? 0;
  let previous = start;
  for (const time of times) {
    if (time - previous > gapMs) start = time;
    best = Math.max(best, time - start);
    previous = time;
  }
  return best;
}

/**
 * The indicators of one user from their usage records (one per operation, oldest first). Rates per hour
 * are over the user's active span in the period (first to last operation, at least one hour). Error rate
 * counts failed operations; agents per window come from the records' agent names.
 */
export function indicators(records: readonly UsageDoc[], t: Thresholds, now = new Date()): Indicator[] {
  if (records.length === 0) return [];
  const at = now.toISOString();
  const timed = records.map((r) => ({ at: Date.parse(r.timestamp), agent: r.agent_name }));
  const times = timed.map((r) => r.at);
  const first = times[0] ?? 0;
  const hours = Math.max(1, ((times.at(-1) ?? first) - first) / HOUR);
  const requestsPerHour = records.length / hours;
  const tokensPerHour = records.reduce((n, r) => n + r.total_tokens, 0) / hours;
  const found: Indicator[] = [];
  const add = (i: Omit<Indicator, 'detected_at'>) => found.push({ ...i, detected_at: at });

  if (requestsPerHour > t.ExtremeRequestRateThreshold) {
    add({
      type: 'ExtremeRequestRate',
      category: 'Volume',
      factor: 'volume',
      severity: 'High',
      description: `Average of ${requestsPerHour.toFixed(1)} requests per hour, above ${t.ExtremeRequestRateThreshold}`,
      metrics: { requests_per_hour: requestsPerHour },
    });
  } else if (requestsPerHour > t.HighRequestRateThreshold) {
    add({
      type: 'HighRequestRate',
      category: 'Volume',
      factor: 'volume',
      severity: 'Medium',
      description: `Average of ${requestsPerHour.toFixed(1)} requests per hour, above ${t.HighRequestRateThreshold}`,
      metrics: { requests_per_hour: requestsPerHour },
    });
  }
  if (tokensPerHour > 100_000) {
    add({
      type: 'ExtremeTokenConsumption',
      category: 'Volume',
      factor: 'token_consumption',
      severity: 'High',
      description: `Average of ${Math.round(tokensPerHour)} tokens per hour, above 100000`,
      metrics: { tokens_per_hour: tokensPerHour },
    });
  } else if (tokensPerHour > 50_000) {
    add({
      type: 'HighTokenConsumption',
      category: 'Volume',
      factor: 'token_consumption',
      severity: 'Medium',
      description: `Average of ${Math.round(tokensPerHour)} tokens per hour, above 50000`,
      metrics: { tokens_per_hour: tokensPerHour },
    });
  }
  const burst = densest(times, t.RapidFireWindowMinutes * MINUTE);
  if (burst > t.RapidFireThreshold) {
    add({
      type: 'RapidFireRequests',
      category: 'Temporal',
      factor: 'temporal',
      severity: 'High',
      description: `${burst} operations within ${t.RapidFireWindowMinutes} minute(s), above ${t.RapidFireThreshold}`,
      metrics: { operations_in_window: burst },
    });
  }
  const run = longestRun(times, t.MaxInactivityGapMinutes * MINUTE) / HOUR;
  if (run > t.ContinuousUsageHours) {
    add({
      type: 'ContinuousUsage',
      category: 'Temporal',
      factor: 'temporal',
      severity: 'Medium',
      description: `${run.toFixed(1)} hours of activity with no gap over ${t.MaxInactivityGapMinutes} minutes`,
      metrics: { continuous_hours: run },
    });
  }
  const failed = records.filter((r) => r.status === 'Failed').length;
  const errorRate = (failed / records.length) * 100;
  if (errorRate > t.HighErrorRateThreshold) {
    add({
      type: 'HighErrorRate',
      category: 'Behavioral',
      factor: 'error_rate',
      severity: 'Medium',
      description: `${errorRate.toFixed(1)}% of operations failed, above ${t.HighErrorRateThreshold}%`,
      metrics: { error_rate_percent: errorRate, failed_operations: failed },
    });
  }
  const hopping = mostAgents(timed, t.AgentHoppingWindowMinutes * MINUTE);
  if (hopping > t.AgentHoppingThreshold) {
    add({
      type: 'AgentHopping',
      category: 'Behavioral',
      factor: 'behavioral',
      severity: 'Medium',
      description: `${hopping} agents within ${t.AgentHoppingWindowMinutes} minutes, above ${t.AgentHoppingThreshold}`,
      metrics: { agents_in_window: hopping },
    });
  }
  return found;
}

const shown = ({ category: _c, factor: _f, ...i }: Indicator) => i;

/** UserAbuseIndicators (the OpenAPI document). */
export function indicatorReport(username: string, found: readonly Indicator[]) {
  const of = (c: Category) => found.filter((i) => i.category === c).map(shown);
  return {
    username,
    risk_score: riskScore(found).risk_score,
    volume_indicators: of('Volume'),
    temporal_indicators: of('Temporal'),
    behavioral_indicators: of('Behavioral'),
    resource_indicators: of('Resource'),
  };
}

/** UserAnomalies items for one user: HighRiskUser (score >= 61) and VolumeAnomaly (High/Critical volume). */
export function anomalies(username: string, found: readonly Indicator[], now = new Date()) {
  const { risk_score } = riskScore(found);
  const out: {
    username: string;
    anomaly_type: string;
    description: string;
    severity: Severity;
    detected_at: string;
    anomaly_data: Record<string, unknown>;
  }[] = [];
  const at = now.toISOString();
  if (risk_score >= 61) {
    out.push({
      username,
      anomaly_type: 'HighRiskUser',
      description: `Risk score ${risk_score}`,
      severity: risk_score >= 81 ? 'Critical' : 'High',
      detected_at: at,
      anomaly_data: { risk_score },
    });
  }
  const volume = found.filter((i) => i.category === 'Volume' && (i.severity === 'High' || i.severity === 'Critical'));
  if (volume.length > 0) {
    out.push({
      username,
      anomaly_type: 'VolumeAnomaly',
      description: volume.map((i) => i.description).join('; '),
      severity: 'High',
      detected_at: at,
      anomaly_data: { indicators: volume.map((i) => i.type) },
    });
  }
  return out;
}
