// Analytics: the dashboards, the cost per cost center and agent with their budgets, and the abuse report,
// for Analytics Readers (docs/analytics.md defines each figure).
import { useEffect, useState } from 'preact/hooks';
import { answer, API_VERSION } from '../api';
import type { components, operations } from '../api-types/management';
import { type Context, ErrorText } from '../shell';
import { BarChart, DailyChart } from './chart';

type Schemas = components['schemas'];
type Query = operations['analytics-query']['requestBody']['content']['application/json'];

/**
 * What each report the portal asks for answers. The document gives a report's `data` as any report's
 * (AnalyticsResponse), not by its request type: this is which schema each request type answers.
 */
interface Reports {
  Overview: Schemas['AnalyticsOverview'];
  AllAgents: Schemas['AnalyticsAgentSummary'][];
  TokenUsageDashboard: Schemas['AnalyticsTokenUsageDashboard'];
  TopUsers: Schemas['AnalyticsTopUserSummary'][];
  CostByCostCenter: Schemas['AnalyticsCostReport'];
  CostByAgent: Schemas['AnalyticsCostReport'];
  BudgetStatus: Schemas['AnalyticsBudgetStatus'][];
}

export function Analytics({ ctx }: { ctx: Context }) {
  const [overview, setOverview] = useState<Reports['Overview']>();
  const [agents, setAgents] = useState<Reports['AllAgents']>([]);
  const [tokens, setTokens] = useState<Reports['TokenUsageDashboard']>();
  const [abuse, setAbuse] = useState<Reports['TopUsers']>([]);
  const [error, setError] = useState<unknown>();
  useEffect(() => {
    Promise.all([
      query(ctx, 'Overview').then(setOverview),
      query(ctx, 'AllAgents').then(setAgents),
      query(ctx, 'TokenUsageDashboard').then(setTokens),
      query(ctx, 'TopUsers', {
        filters: { top_count: 10, sort_by: 'Tokens' },
        options: { include_abuse_detection: true },
      }).then(setAbuse),
    ]).catch(setError);
  }, []);
  if (error) return <ErrorText error={error} />;
  return (
    <section aria-label="Analytics">
      <h2>Analytics</h2>
      {overview && (
        <dl class="overview">
          {Object.entries(overview).map(([k, v]) => (
            <div key={k}>
              <dt>{k.replace(/_/g, ' ')}</dt>
              <dd>{v}</dd>
            </div>
          ))}
        </dl>
      )}
      <BarChart
        title="Conversations per agent"
        bars={agents.map((a) => ({ label: a.agent_name, value: a.total_conversations }))}
      />
      <BarChart
        title="Tokens per agent"
        bars={(tokens?.agents ?? []).map((a) => ({ label: a.agent_name, value: a.total_tokens }))}
      />
      <BarChart
        title="Tokens per model deployment"
        bars={(tokens?.models ?? []).map((m) => ({ label: m.model_deployment_name, value: m.total_tokens }))}
      />
      <Costs ctx={ctx} />
      <h3>Abuse report (top users)</h3>
      <table>
        <thead>
          <tr>
            <th>User</th>
            <th>Requests</th>
            <th>Risk score</th>
          </tr>
        </thead>
        <tbody>
          {abuse.map((u) => (
            <tr key={u.username}>
              <td>{u.username}</td>
              <td>{u.total_requests}</td>
              <td>{u.abuse_risk_score ?? '-'}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

/** One report, as the schema its request type answers. */
async function query<Type extends keyof Reports>(
  ctx: Context,
  request_type: Type,
  options: Omit<Query, 'request_type'> = {},
): Promise<Reports[Type]> {
  const r = await answer(
    ctx.api.management.POST('/providers/Svc.Analytics/analytics/query', {
      params: { query: { 'api-version': API_VERSION } },
      body: { request_type, ...options },
    }),
  );
  // `data` is one of the reports' schemas (above): the one this request type answers.
  return r.resource.data as Reports[Type];
}

const money = (amount: number, currency: string | null) =>
  `${amount.toLocaleString(undefined, { maximumFractionDigits: 6 })}${currency ? ` ${currency}` : ''}`;

/**
 * Cost per cost center and per agent over the last 30 days, each with its daily chart, and where each budget
 * stands.
 */
function Costs({ ctx }: { ctx: Context }) {
  const [centers, setCenters] = useState<Reports['CostByCostCenter']>();
  const [agents, setAgents] = useState<Reports['CostByAgent']>();
  const [budgets, setBudgets] = useState<Reports['BudgetStatus']>([]);
  const [error, setError] = useState<unknown>();
  useEffect(() => {
    Promise.all([
      query(ctx, 'CostByCostCenter').then(setCenters),
      query(ctx, 'CostByAgent').then(setAgents),
      query(ctx, 'BudgetStatus').then(setBudgets),
    ]).catch(setError);
  }, []);
  if (error) return <ErrorText error={error} />;
  /** A charge-back report (per group and currency) as a daily chart per group. */
  const charts = (title: string, report: Schemas['AnalyticsCostReport'] | undefined, none: string) =>
    (report?.items ?? []).map((i) => (
      <DailyChart
        key={`${title}-${i.name}-${i.currency}`}
        title={`${title} ${i.name ?? none}`}
        unit={i.currency ?? ''}
        days={i.daily.map((d) => ({ date: d.date, value: d.cost }))}
      />
    ));
  return (
    <section aria-label="Cost">
      <h3>Cost, last 30 days</h3>
      <p>
        {centers?.totals.length
          ? centers.totals.map((t) => `${money(t.total_cost, t.currency)} over ${t.requests} requests`).join('; ')
          : 'No priced calls in this period.'}
      </p>
      {charts('Cost center', centers, '(none)')}
      {charts('Agent', agents, '')}
      <h3>Budgets</h3>
      {budgets.length === 0 ? (
        <p class="muted">No budgets (App configuration, Svc:Budgets).</p>
      ) : (
        <table aria-label="Budget status">
          <thead>
            <tr>
              <th>Budget</th>
              <th>Caps</th>
              <th>Limit</th>
              <th>Spent</th>
              <th>Remaining</th>
            </tr>
          </thead>
          <tbody>
            {budgets.flatMap((b) =>
              (b.subjects.length ? b.subjects : [{ subject: null, spent: 0, remaining: b.limit }]).map((x) => (
                <tr key={`${b.name}-${x.subject}`}>
                  <td>{b.name}</td>
                  <td>
                    {b.scope.replace('_', ' ')}
                    {x.subject ? ` ${x.subject}` : ''}
                  </td>
                  <td>
                    {money(b.limit, b.currency)} a {b.period}
                  </td>
                  <td>{money(x.spent, b.currency)}</td>
                  <td>{money(x.remaining, b.currency)}</td>
                </tr>
              )),
            )}
          </tbody>
        </table>
      )}
    </section>
  );
}
