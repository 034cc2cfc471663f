// The AnalyticsRequest (the OpenAPI document): request types, filters with their defaults, and the rules
// for required filters.
import { z } from 'zod';
import { ownerKey } from '../auth/principal.js';
import { badRequest } from '../errors.js';

export const REQUEST_TYPES = [
  'Overview',
  'AllAgents',
  'AgentSummary',
  'AgentToolCombinations',
  'AgentFiles',
  'Tools',
  'Models',
  'TopUsers',
  'UserSummary',
  'UserActivityTimeline',
  'DailyMessageCountsPerAgent',
  'DailyUserCountsPerAgent',
  'AllUsers',
  'UserAbuseRiskScore',
  'UserAbuseIndicators',
  'UserAnomalies',
  'DailyActiveUsers',
  'TokenUsageDashboard',
] as const;
/** Charge-back: request types numbered from 100, beyond the interface's 0 to 17. */
export const CHARGE_BACK_TYPES = [
  'CostByCostCenter',
  'CostByAgent',
  'CostByUser',
  'CostByModel',
  'BudgetStatus',
] as const;
export const CHARGE_BACK_BASE = 100;
export type RequestType = (typeof REQUEST_TYPES)[number] | (typeof CHARGE_BACK_TYPES)[number];

/** Every request type by its number. */
export const REQUEST_TYPE_NUMBERS: ReadonlyMap<number, RequestType> = new Map<number, RequestType>([
  ...REQUEST_TYPES.map((t, i) => [i, t] as const),
  ...CHARGE_BACK_TYPES.map((t, i) => [CHARGE_BACK_BASE + i, t] as const),
]);
const NUMBER_OF = new Map([...REQUEST_TYPE_NUMBERS].map(([n, t]) => [t, n]));
const ALL_NAMES = [...REQUEST_TYPES, ...CHARGE_BACK_TYPES] as const;
const TYPE_RANGE =
  `request_type must be 0 to 17 or ${CHARGE_BACK_BASE} to ` + `${CHARGE_BACK_BASE + CHARGE_BACK_TYPES.length - 1}`;

const NEEDS_AGENT: readonly RequestType[] = ['AgentSummary', 'AgentToolCombinations', 'AgentFiles'];
const NEEDS_USER: readonly RequestType[] = [
  'UserSummary',
  'UserActivityTimeline',
  'UserAbuseRiskScore',
  'UserAbuseIndicators',
];

export const AnalyticsRequest = z
  .object({
    /** The request type's number (0-17, and 100-104 for charge-back); the name is accepted too. */
    request_type: z.union(
      [
        z
          .number()
          .int()
          .refine((n) => REQUEST_TYPE_NUMBERS.has(n), TYPE_RANGE),
        z.enum(ALL_NAMES),
      ],
      { error: TYPE_RANGE },
    ),
    filters: z
      .object({
        start_date: z.iso.datetime({ offset: true }).optional(),
        end_date: z.iso.datetime({ offset: true }).optional(),
        agent_name: z.string().min(1).optional(),
        username: z.string().min(1).optional(),
        top_count: z.number().int().positive().max(1000).default(10),
        sort_by: z.enum(['Requests', 'Tokens', 'Sessions', 'RiskScore']).default('Requests'),
      })
      .strict()
      .default({ top_count: 10, sort_by: 'Requests' }),
    options: z
      .object({
        include_abuse_detection: z.boolean().default(false),
        include_anomaly_detection: z.boolean().default(false),
      })
      .strict()
      .default({ include_abuse_detection: false, include_anomaly_detection: false }),
  })
  .strict();
export type AnalyticsRequest = z.output<typeof AnalyticsRequest>;

export interface Period {
  /** ISO timestamps, inclusive. */
  start: string;
  end: string;
  /** Every UTC day of the period, YYYY-MM-DD. */
  days: string[];
}

export interface Resolved {
  type: RequestType;
  number: number;
  period: Period;
  agent: string | undefined;
  user: string | undefined;
  request: AnalyticsRequest;
}

const DAY = 86_400_000;

/** Applies defaults (last 30 days) and checks the filters each request type requires. */
export function resolve(request: AnalyticsRequest, now = new Date()): Resolved {
  const type =
    typeof request.request_type === 'number' ? REQUEST_TYPE_NUMBERS.get(request.request_type) : request.request_type;
  const number = type === undefined ? undefined : NUMBER_OF.get(type);
  // The schema admits only numbers and names of request types: this holds for every parsed request.
  if (type === undefined || number === undefined) throw badRequest(TYPE_RANGE);
  const f = request.filters;
  if (NEEDS_AGENT.includes(type) && !f.agent_name) throw badRequest(`filters.agent_name is required for ${type}`);
  if (NEEDS_USER.includes(type) && !f.username) throw badRequest(`filters.username is required for ${type}`);
  const end = f.end_date ? new Date(f.end_date) : now;
  const start = f.start_date ? new Date(f.start_date) : new Date(end.getTime() - 30 * DAY);
  if (start > end) throw badRequest('filters.start_date must not be after filters.end_date');
  if (end.getTime() - start.getTime() > 366 * DAY) throw badRequest('The period may span at most 366 days');
  const days: string[] = [];
  for (
    let d = Date.UTC(start.getUTCFullYear(), start.getUTCMonth(), start.getUTCDate());
    d <= end.getTime();
    d += DAY
  ) {
    days.push(new Date(d).toISOString().slice(0, 10));
  }
  return {
    type,
    number,
    period: { start: start.toISOString(), end: end.toISOString(), days },
    agent: f.agent_name,
    user: f.username === undefined ? undefined : ownerKey(f.username),
    request,
  };
}
