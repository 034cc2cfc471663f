// Analytics: the dashboards and the abuse report, for Analytics Readers.
import { useEffect, useState } from 'preact/hooks';
import { type Context, ErrorText } from '../shell';
import { BarChart } from './chart';
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
