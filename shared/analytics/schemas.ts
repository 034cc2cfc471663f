// The shapes of AnalyticsResponse.data per request type, for the OpenAPI document and generated
// clients. A test runs every request type and checks its answer against these, so they cannot drift.
import { z } from 'zod';
import type { RequestType } from './request.js';

const Count = z.number().int();
const Ratio = z.number();
const Severity = z.enum(['Medium', 'High', 'Critical']);

const Overview = z
  .object({
    total_conversations: Count,
    total_tokens: Count,
    active_users: Count,
    total_agents: Count,
    avg_response_time_ms: Ratio,
    total_tools: Count,
    total_models: Count,
  })
  .strict()
  .meta({ id: 'AnalyticsOverview' });

const AgentSummary = z
  .object({
    agent_name: z.string(),
    unique_users: Count,
    total_conversations: Count,
    total_tokens: Count,
    avg_tokens_per_session: Ratio,
    avg_tools_used: Ratio,
    avg_response_time_ms: Ratio,
    p95_response_time_ms: z.number().nullable(),
    error_rate: Ratio,
    most_used_tools: z.array(z.string()),
    avg_files_per_conversation: Ratio,
    avg_rounds_per_conversation: Ratio,
  })
  .strict()
  .meta({ id: 'AnalyticsAgentSummary' });

const FileSummary = z
  .object({
    total_files: Count,
    total_storage_bytes: Count,
    avg_file_size_bytes: Ratio,
    median_file_size_bytes: Ratio,
    avg_files_per_conversation: Ratio,
    file_type_distribution: z.record(z.string(), Count),
  })
  .strict()
  .meta({ id: 'AnalyticsFileSummary' });

const ModelSummary = z
  .object({
    model_name: z.string(),
    deployment_name: z.string(),
    total_tokens: Count,
    agent_count: Count,
    usage_count: Count,
    avg_response_time_ms: Ratio,
    avg_tokens_per_completion: Ratio,
    cost_per_request: Ratio,
    error_rate: Ratio,
  })
  .strict()
  .meta({ id: 'AnalyticsModelSummary' });

const Indicator = z
  .object({
    type: z.string(),
    description: z.string(),
    severity: Severity,
    detected_at: z.string(),
    metrics: z.record(z.string(), z.number()),
  })
  .strict()
  .meta({ id: 'AnalyticsAbuseIndicator' });

const IndicatorReport = z
  .object({
    username: z.string(),
    risk_score: z.number(),
    volume_indicators: z.array(Indicator),
    temporal_indicators: z.array(Indicator),
    behavioral_indicators: z.array(Indicator),
    resource_indicators: z.array(Indicator),
  })
  .strict()
  .meta({ id: 'AnalyticsUserAbuseIndicators' });

const TopUser = z
  .object({
    username: z.string(),
    upn: z.string(),
    total_requests: Count,
    total_tokens: Count,
    active_sessions: Count,
    last_activity: z.string().nullable(),
    abuse_risk_score: z.number().optional(),
    abuse_indicators: IndicatorReport.optional(),
    avg_response_time_ms: Ratio,
    error_rate: Ratio,
    agents_used: Count,
  })
  .strict()
  .meta({ id: 'AnalyticsTopUserSummary' });

const UserSummary = z
  .object({
    username: z.string(),
    total_requests: Count,
    total_tokens: Count,
    total_sessions: Count,
    active_days: Count,
    avg_session_length: Ratio,
    avg_response_time_ms: Ratio,
    error_rate: Ratio,
    agents_used: Count,
    peak_usage_hour: Count.nullable(),
    peak_usage_day: z.string().nullable().optional(),
  })
  .strict()
  .meta({ id: 'AnalyticsUserSummary' });

const ActivityTimeline = z
  .object({
    username: z.string(),
    entries: z.array(
      z
        .object({
          timestamp: z.string(),
          session_id: z.string().nullable(),
          operation_id: z.string(),
          tokens: Count,
          agent_name: z.string(),
        })
        .strict(),
    ),
  })
  .strict()
  .meta({ id: 'AnalyticsUserActivityTimeline' });

const DailyAgentCounts = z
  .object({ date: z.string(), agent_counts: z.record(z.string(), Count) })
  .strict()
  .meta({ id: 'AnalyticsDailyAgentCounts' });

const UserSummarySimple = z
  .object({
    username: z.string(),
    total_conversations: Count,
    total_messages: Count,
    operation_count: Count,
    total_tokens: Count,
  })
  .strict()
  .meta({ id: 'AnalyticsUserSummarySimple' });

const RiskScore = z
  .object({
    username: z.string(),
    risk_score: z.number(),
    factor_scores: z
      .object({
        volume: z.number(),
        token_consumption: z.number(),
        error_rate: z.number(),
        temporal: z.number(),
        behavioral: z.number(),
        resource_exhaustion: z.number(),
      })
      .strict(),
  })
  .strict()
  .meta({ id: 'AnalyticsUserAbuseRiskScore' });

const Anomaly = z
  .object({
    username: z.string(),
    anomaly_type: z.string(),
    description: z.string(),
    severity: Severity,
    detected_at: z.string(),
    anomaly_data: z.record(z.string(), z.unknown()),
  })
  .strict()
  .meta({ id: 'AnalyticsUserAnomaly' });

const DailyActiveUsers = z
  .object({ date: z.string(), count: Count })
  .strict()
  .meta({ id: 'AnalyticsDailyActiveUserCount' });

const TokenDashboard = z
  .object({
    total_tokens: Count,
    total_users: Count,
    total_agents: Count,
    total_models: Count,
    agents: z.array(
      z
        .object({ agent_name: z.string(), total_tokens: Count, unique_users: Count, total_conversations: Count })
        .strict(),
    ),
    users: z.array(
      z
        .object({ username: z.string(), total_tokens: Count, total_conversations: Count, operation_count: Count })
        .strict(),
    ),
    models: z.array(z.object({ model_deployment_name: z.string(), total_tokens: Count, agent_count: Count }).strict()),
  })
  .strict()
  .meta({ id: 'AnalyticsTokenUsageDashboard' });

/** Tool figures, from the tool runs completions record. */
const ToolCombinations = z
  .record(z.string(), Count)
  .describe('Tool names run together in one completion, joined by " + ", to the number of completions')
  .meta({ id: 'AnalyticsAgentToolCombinations' });
const ToolSummary = z.object({ tool_name: z.string(), usage_count: Count }).meta({ id: 'AnalyticsToolSummary' });

const Money = z.number().describe('An amount of the currency, to the millionth');
const Currency = z
  .string()
  .nullable()
  .describe("ISO 4217 code from the model's pricing; null for costs of models priced per 1,000 tokens without one");

const CostFigures = {
  total_cost: Money,
  prompt_tokens: Count,
  completion_tokens: Count,
  total_tokens: Count,
  requests: Count.describe('Completions (usage records), failed ones included'),
};

const CostReport = z
  .object({
    group_by: z.enum(['cost_center', 'agent', 'user', 'model']),
    totals: z
      .array(z.object({ currency: Currency, ...CostFigures }).strict())
      .describe('Per currency, over every group'),
    items: z
      .array(
        z
          .object({
            name: z
              .string()
              .nullable()
              .describe(
                'The cost center (null: agents without one), agent, user UPN, or model deployment (Unknown when none)',
              ),
            currency: Currency,
            ...CostFigures,
            daily: z
              .array(z.object({ date: z.string(), cost: Money, total_tokens: Count, requests: Count }).strict())
              .describe('Every UTC day of the period, zero-filled'),
          })
          .strict(),
      )
      .describe('One per group and currency, most costly first'),
  })
  .strict()
  .meta({ id: 'AnalyticsCostReport' });

const BudgetStatus = z
  .object({
    name: z.string(),
    scope: z.enum(['instance', 'agent', 'user', 'cost_center', 'access_token']),
    agent_name: z.string().nullable(),
    cost_center: z.string().nullable(),
    limit: Money,
    currency: z.string(),
    period: z.enum(['day', 'week', 'month']),
    period_start: z.string().describe('The current period, UTC'),
    period_end: z.string(),
    subjects: z
      .array(
        z
          .object({
            subject: z.string().nullable().describe("A user's UPN or a token's id; null for the whole scope"),
            spent: Money,
            reserved: Money,
            remaining: Money,
          })
          .strict(),
      )
      .describe(
        'Where the budget stands in the current period, from its counters: one entry for the whole scope, or ' +
          'one per user or token that spent, most spent first',
      ),
    daily: z
      .array(z.object({ date: z.string(), cost: Money }).strict())
      .describe("Spend in the budget's scope on every UTC day of the requested period"),
  })
  .strict()
  .meta({ id: 'AnalyticsBudgetStatus' });

/** The `data` of each request type. */
export const ANALYTICS_DATA: Record<RequestType, z.ZodType> = {
  Overview,
  AllAgents: z.array(AgentSummary),
  AgentSummary,
  AgentToolCombinations: ToolCombinations,
  AgentFiles: FileSummary,
  Tools: z.array(ToolSummary),
  Models: z.array(ModelSummary),
  TopUsers: z.array(TopUser),
  UserSummary,
  UserActivityTimeline: ActivityTimeline,
  DailyMessageCountsPerAgent: z.array(DailyAgentCounts),
  DailyUserCountsPerAgent: z.array(DailyAgentCounts),
  AllUsers: z.array(UserSummarySimple),
  UserAbuseRiskScore: RiskScore,
  UserAbuseIndicators: IndicatorReport,
  UserAnomalies: z.array(Anomaly),
  DailyActiveUsers: z.array(DailyActiveUsers),
  TokenUsageDashboard: TokenDashboard,
  CostByCostCenter: CostReport,
  CostByAgent: CostReport,
  CostByUser: CostReport,
  CostByModel: CostReport,
  BudgetStatus: z.array(BudgetStatus),
};

/** AnalyticsResponse: `data` is the shape of `request_type`. */
export const AnalyticsResponse = z
  .object({
    request_type: z.number().int(),
    generated_at_utc: z.string(),
    data: z.union([...new Set(Object.values(ANALYTICS_DATA))]).describe('The shape depends on request_type'),
  })
  .meta({ id: 'AnalyticsResponse' });
