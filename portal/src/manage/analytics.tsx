// Analytics: the dashboards, the cost per cost center and agent with their budgets, and the abuse report,
// for Analytics Readers (docs/analytics.md defines each figure).
import { useEffect, useState } from 'preact/hooks';
import { type Context, ErrorText } from '../shell';
import { BarChart, DailyChart } from './chart';
export interface Dashboard {
  agents: { agent_name: string; total_tokens: number }[];
  models: { model_deployment_name: string; total_tokens: number }[];
  users: { username: string; total_tokens: number }[];
}

export function Analytics({ ctx }: { ctx: Context }) {
  const [overview, setOverview] = useState<Record<string, number>>();
  const [agents, setAgents] = useState<{ agent_name: string; total_conversations: number; total_tokens: number }[]>([]);
  const [tokens, setTokens] = useState<Dashboard>();
  const [abuse, setAbuse] = useState<{ username: string; total_requests: number; abuse_risk_score?: number }[]>([]);
  const [error, setError] = useState<unknown>();
  useEffect(() => {
    Promise.all([
      query<Record<string, number>>(ctx, 'Overview').then(setOverview),
      query<typeof agents>(ctx, 'AllAgents').then(setAgents),
      query<Dashboard>(ctx, 'TokenUsageDashboard').then(setTokens),
      query<typeof abuse>(ctx, 'TopUsers', { filters: { top_count: 10, sort_by: 'Tokens' }, options: { include_abuse_detection: true } }).then(setAbuse),
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
      <BarChart title="Conversations per agent" bars={agents.map((a) => ({ label: a.agent_name, value: a.total_conversations }))} />
      <BarChart title="Tokens per agent" bars={(tokens?.agents ?? []).map((a) => ({ label: a.agent_name, value: a.total_tokens }))} />
      <BarChart title="Tokens per model deployment" bars={(tokens?.models ?? []).map((m) => ({ label: m.model_deployment_name, value: m.total_tokens }))} />
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

export const query = <T,>(ctx: Context, request_type: string, options: Record<string, unknown> = {}) =>
  ctx.api.json<{ resource: { data: T } }>('management', '/providers/Svc.Analytics/analytics/query?api-version=2024-02-16', { method: 'POST', json: { request_type, ...options } }).then((r) => r.resource.data);

/** A charge-back report (request types 100 to 103): per group and currency, with a daily series. */
interface CostReport {
  totals: { currency: string | null; total_cost: number; requests: number }[];
  items: { name: string | null; currency: string | null; total_cost: number; requests: number; daily: { date: string; cost: number }[] }[];
}

interface BudgetStanding {
  name: string;
  scope: string;
  limit: number;
  currency: string;
  period: string;
  subjects: { subject: string | null; spent: number; remaining: number }[];
}

const money = (amount: number, currency: string | null) => `${amount.toLocaleString(undefined, { maximumFractionDigits: 6 })}${currency ? ` ${currency}` : ''}`;

/** Cost per cost center and per agent over the last 30 days, each with its daily chart, and where each budget stands. */
function Costs({ ctx }: { ctx: Context }) {
  const [centers, setCenters] = useState<CostReport>();
  const [agents, setAgents] = useState<CostReport>();
  const [budgets, setBudgets] = useState<BudgetStanding[]>([]);
  const [error, setError] = useState<unknown>();
  useEffect(() => {
    Promise.all([query<CostReport>(ctx, 'CostByCostCenter').then(setCenters), query<CostReport>(ctx, 'CostByAgent').then(setAgents), query<BudgetStanding[]>(ctx, 'BudgetStatus').then(setBudgets)]).catch(setError);
  }, []);
  if (error) return <ErrorText error={error} />;
  const charts = (title: string, report: CostReport | undefined, none: string) =>
    (report?.items ?? []).map((i) => <DailyChart key={`${title}-${i.name}-${i.currency}`} title={`${title} ${i.name ?? none}`} unit={i.currency ?? ''} days={i.daily.map((d) => ({ date: d.date, value: d.cost }))} />);
  return (
    <section aria-label="Cost">
      <h3>Cost, last 30 days</h3>
      <p>{centers?.totals.length ? centers.totals.map((t) => `${money(t.total_cost, t.currency)} over ${t.requests} requests`).join('; ') : 'No priced calls in this period.'}</p>
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
