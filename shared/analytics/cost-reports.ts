// Charge-back (request types 100 to 104): what completions cost, grouped by cost center, agent, user or
// model, each in its currency with a daily series; and where each budget stands. From the usage records,
// which carry each completion's cost, currency and agent's cost center (docs/analytics.md).
import type { BudgetDefinition } from '../completions/budget-definitions.js';
import type { Budgets } from '../completions/budgets.js';
import { money } from '../models/pricing.js';
import { resourceId } from '../providers/types/resource-type.js';
import type { Filter } from '../store/types.js';
import { eq, num, str, type Sources } from './data.js';
import type { Period } from './request.js';

export type CostGroup = 'cost_center' | 'agent_name' | 'upn' | 'model_deployment_name';

interface Figures {
  cost: number;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  requests: number;
}

const FIGURES = {
  cost: { fn: 'sum', field: 'cost' },
  prompt_tokens: { fn: 'sum', field: 'prompt_tokens' },
  completion_tokens: { fn: 'sum', field: 'completion_tokens' },
  total_tokens: { fn: 'sum', field: 'total_tokens' },
  requests: { fn: 'count' },
} as const;

const empty = (): Figures => ({ cost: 0, prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, requests: 0 });
function add(to: Figures, row: Record<string, unknown>): void {
  to.cost += num(row.cost);
  to.prompt_tokens += num(row.prompt_tokens);
  to.completion_tokens += num(row.completion_tokens);
  to.total_tokens += num(row.total_tokens);
  to.requests += num(row.requests);
}
const present = (f: Figures) => ({
  total_cost: money(f.cost),
  prompt_tokens: f.prompt_tokens,
  completion_tokens: f.completion_tokens,
  total_tokens: f.total_tokens,
  requests: f.requests,
});

/** A record's group name: no cost center is null, no model deployment is Unknown (as in the token dashboard). */
function groupName(group: CostGroup, value: unknown): string | null {
  const name = str(value);
  if (group === 'cost_center') return name || null;
  if (group === 'model_deployment_name') return name || 'Unknown';
  return name;
}

/** What a cost report groups by, the agent and user it is restricted to, and how many groups it keeps. */
export interface CostReportQuery {
  group: CostGroup;
  agent?: string | undefined;
  user?: string | undefined;
  top?: number;
}

/**
 * Cost per group and currency over the period, most costly first, each with its daily series (every day,
 * zero-filled), and the totals per currency. `top` keeps the first groups only (users); totals cover all.
 */
export async function costBy(src: Sources, period: Period, report: CostReportQuery) {
  const { group, agent, user, top } = report;
  const where: Filter[] = [...(agent ? [eq('agent_name', agent)] : []), ...(user ? [eq('upn', user)] : [])];
  const rows = await src.usage.group(where, [group, 'currency', 'day'], FIGURES);
  const groups = new Map<
    string,
    { name: string | null; currency: string | null; figures: Figures; days: Map<string, Figures> }
  >();
  const totals = new Map<string | null, Figures>();
  for (const row of rows) {
    const name = groupName(group, row[group]);
    const currency = str(row.currency) || null;
    const key = JSON.stringify([name, currency]);
    const g = groups.get(key) ?? { name, currency, figures: empty(), days: new Map<string, Figures>() };
    groups.set(key, g);
    add(g.figures, row);
    const day = g.days.get(str(row.day)) ?? empty();
    g.days.set(str(row.day), day);
    add(day, row);
    const total = totals.get(currency) ?? empty();
    totals.set(currency, total);
    add(total, row);
  }
  const items = [...groups.values()]
    .sort(
      (a, b) =>
        b.figures.cost - a.figures.cost ||
        b.figures.total_tokens - a.figures.total_tokens ||
        String(a.name).localeCompare(String(b.name)),
    )
    .slice(0, top)
    .map((g) => ({
      name: g.name,
      currency: g.currency,
      ...present(g.figures),
      daily: period.days.map((date) => {
        const d = g.days.get(date) ?? empty();
        return { date, cost: money(d.cost), total_tokens: d.total_tokens, requests: d.requests };
      }),
    }));
  return {
    group_by:
      group === 'upn'
        ? 'user'
        : group === 'model_deployment_name'
          ? 'model'
          : group === 'agent_name'
            ? 'agent'
            : 'cost_center',
    // By currency, costs without one last.
    totals: [...totals]
      .map(([currency, f]) => ({ currency, ...present(f) }))
      .sort(
        (a, b) =>
          Number(a.currency === null) - Number(b.currency === null) ||
          (a.currency ?? '').localeCompare(b.currency ?? ''),
      ),
    items,
  };
}

/** The usage records a budget counts: its agent, its cost center, and calls by users or by tokens for those scopes. */
function budgetWhere(b: BudgetDefinition): Filter[] {
  return [
    ...(b.agent_name ? [eq('agent_name', b.agent_name)] : []),
    ...(b.cost_center ? [eq('cost_center', b.cost_center)] : []),
  ];
}

/** Agent access tokens' calls: their usage records' UPNs are the tokens' virtual identities. */
const TOKEN_CALLS: Filter = { field: 'upn', op: 'startsWith', value: 'aat_' };

/**
 * Spend per day and currency in the budget's scope (a cost without a currency counts in every budget, as at admission).
 */
async function budgetDaily(src: Sources, b: BudgetDefinition): Promise<Map<string, number>> {
  const daily = async (where: Filter[]) => {
    const rows = await src.usage.group(where, ['day', 'currency'], { cost: { fn: 'sum', field: 'cost' } });
    const out = new Map<string, number>();
    for (const r of rows)
      if (!str(r.currency) || str(r.currency) === b.currency)
        out.set(str(r.day), (out.get(str(r.day)) ?? 0) + num(r.cost));
    return out;
  };
  const where = budgetWhere(b);
  if (b.scope === 'access_token') return daily([...where, TOKEN_CALLS]);
  const all = await daily(where);
  // A user budget counts the calls users make: every call but those made with agent access tokens.
  if (b.scope === 'user')
    for (const [day, cost] of await daily([...where, TOKEN_CALLS])) all.set(day, (all.get(day) ?? 0) - cost);
  return all;
}

/**
 * Every budget (or those applying to `agent`): its definition, where each subject stands in the current
 * period (from the budget counters, as admission sees them), and its daily spend over the requested period.
 */
export async function budgetStatus(
  src: Sources,
  period: Period,
  { budgets, agent }: { budgets: Budgets; agent: string | undefined },
) {
  const definitions = (await budgets.definitions()).filter(
    (b) => !agent || b.agent_name === undefined || resourceId(b.agent_name) === resourceId(agent),
  );
  return Promise.all(
    definitions.map(async (b) => {
      const [standing, daily] = await Promise.all([budgets.standing(b), budgetDaily(src, b)]);
      return {
        name: b.name,
        scope: b.scope,
        agent_name: b.agent_name ?? null,
        cost_center: b.cost_center ?? null,
        limit: b.limit,
        currency: b.currency,
        period: b.period,
        period_start: new Date(standing.period.start).toISOString(),
        period_end: new Date(standing.period.end).toISOString(),
        subjects: standing.subjects,
        daily: period.days.map((date) => ({ date, cost: money(daily.get(date) ?? 0) })),
      };
    }),
  );
}
