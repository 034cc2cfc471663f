// App configuration with forms of its own: the branding (Svc:Branding:*), the completion quotas
// (Svc:Quota:Definitions; docs/configuration.md, Runtime settings) and the budgets (Svc:Budgets;
// docs/api-decisions.md, Prices and budgets). Each writes app configuration resources through the
// Management API, which checks them; its message is shown when it refuses one.
import { useEffect, useState } from 'preact/hooks';
import { answer } from '../api';
import { ApiError } from '../api-error';
import { text, unwrap, type Resource } from '../resource';
import { ErrorText, submitTo, type Context } from '../shell';
import { listResources } from './read-resources';

const SETTING = '/providers/Svc.Configuration/appConfigurations/{name}';

/** Writes one app configuration value. */
const write = (ctx: Context, key: string, value: string) =>
  ctx.api.management.POST(SETTING, { params: { path: { name: key } }, body: { name: key, key, value } });

/** The branding settings: the field of GET /branding and the app configuration key behind it. */
const BRANDING = [
  ['company_name', 'Svc:Branding:CompanyName', 'Company name'],
  ['page_title', 'Svc:Branding:PageTitle', 'Page title'],
  ['logo_url', 'Svc:Branding:LogoUrl', 'Logo URL (https, or a path on this site)'],
  ['primary_color', 'Svc:Branding:PrimaryColor', 'Primary colour (a CSS colour)'],
  ['primary_text_color', 'Svc:Branding:PrimaryTextColor', 'Primary text colour (a CSS colour)'],
] as const;

/** Branding as the portals show it (GET /branding), each changed value written to its app configuration key. */
export function BrandingForm({ ctx, onSaved }: { ctx: Context; onSaved: () => void }) {
  const [loaded, setLoaded] = useState<Record<string, string>>();
  const [values, setValues] = useState<Record<string, string>>({});
  const [error, setError] = useState<unknown>();
  const [saved, setSaved] = useState(false);
  const read = () =>
    answer(ctx.api.core.GET('/branding')).then((b) => {
      const v = Object.fromEntries(BRANDING.map(([field]) => [field, b[field]]));
      setLoaded(v);
      setValues(v);
    }, setError);
  useEffect(() => void read(), []);
  const save = async () => {
    setSaved(false);
    setError(undefined);
    // One key at a time: a value the API refuses is reported by name, and the ones before it are kept.
    for (const [field, key] of BRANDING) {
      if (values[field] === loaded?.[field]) continue;
      await write(ctx, key, values[field] ?? '');
    }
    await read();
    setSaved(true);
    onSaved();
  };
  if (!loaded) return <ErrorText error={error} />;
  return (
    <form class="properties" aria-label="Branding" onSubmit={submitTo(save, setError)}>
      <h3>Branding</h3>
      {BRANDING.map(([field, , label]) => (
        <div key={field}>
          <label for={`b-${field}`}>{label}</label>
          <input
            id={`b-${field}`}
            value={values[field] ?? ''}
            onInput={(e) => setValues({ ...values, [field]: e.currentTarget.value })}
          />
        </div>
      ))}
      <ErrorText error={error} />
      <button type="submit">Save branding</button>
      {saved && <span role="status"> Saved.</span>}
    </form>
  );
}

const QUOTA_KEY = 'Svc:Quota:Definitions';
const ALL_AGENTS = 'CoreAPI:Completions';

/** A quota definition as the Svc:Quota:Definitions setting holds it. */
interface Quota {
  name: string;
  description?: string;
  context: string;
  metric: 'requests' | 'tokens';
  metric_partition: 'None' | 'UserPrincipalName' | 'UserIdentifier';
  metric_limit: number;
  metric_window_seconds: number;
  lockout_duration_seconds: number;
}

const PARTITIONS = [
  ['UserPrincipalName', 'each user (by user principal name)'],
  ['UserIdentifier', 'each user (by object id)'],
  ['None', 'everyone together'],
] as const;

const fresh = (): Quota => ({
  name: '',
  context: ALL_AGENTS,
  metric: 'requests',
  metric_partition: 'UserPrincipalName',
  metric_limit: 60,
  metric_window_seconds: 60,
  lockout_duration_seconds: 0,
});

/** A list setting's stored definitions (a JSON array): none when the key is absent or deleted. */
async function readList<T>(ctx: Context, key: string, what: string): Promise<T[]> {
  let stored: Resource;
  try {
    stored = unwrap(await answer(ctx.api.management.GET(SETTING, { params: { path: { name: key } } })));
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return [];
    throw e;
  }
  if (stored.deleted) return [];
  try {
    const list = JSON.parse(text(stored.value)) as unknown;
    if (Array.isArray(list)) return list as T[];
  } catch {
    // Falls through: a value saved before the API checked it.
  }
  throw new Error(`The stored ${key} is not a list of ${what}; saving replaces it`);
}

/**
 * A list setting as definitions to edit, add and remove, saved together as its JSON; the agents the caller
 * can list, for the definitions that name one.
 */
function useListSetting<T>(ctx: Context, key: string, what: string, onSaved: () => void) {
  const [list, setList] = useState<T[]>();
  const [agents, setAgents] = useState<string[]>([]);
  const [error, setError] = useState<unknown>();
  const [saved, setSaved] = useState(false);
  const read = () =>
    readList<T>(ctx, key, what).then(setList, (e: unknown) => {
      setList([]);
      setError(e);
    });
  useEffect(() => {
    void read();
    void listResources(ctx.api, 'Svc.Agent/agents').then(
      (l) => setAgents(l.filter((a) => !a.deleted).map((a) => a.name)),
      setError,
    );
  }, []);
  const save = async () => {
    setSaved(false);
    setError(undefined);
    await write(ctx, key, JSON.stringify(list));
    await read();
    setSaved(true);
    onSaved();
  };
  const change = (i: number, patch: Partial<T>) => setList(list?.map((x, j) => (j === i ? { ...x, ...patch } : x)));
  return { list, setList, agents, error, setError, saved, save, change };
}

/**
 * The completion quotas as a list of definitions to edit, add and remove; saved together as the JSON
 * Svc:Quota:Definitions holds. An agent's quota names it from the agents the caller can list.
 */
export function QuotasForm({ ctx, onSaved }: { ctx: Context; onSaved: () => void }) {
  const {
    list: quotas,
    setList: setQuotas,
    agents,
    error,
    setError,
    saved,
    save,
    change,
  } = useListSetting<Quota>(ctx, QUOTA_KEY, 'quota definitions', onSaved);
  if (!quotas) return <ErrorText error={error} />;
  const agentOf = (q: Quota) => (q.context.startsWith(`${ALL_AGENTS}:`) ? q.context.slice(ALL_AGENTS.length + 1) : '');
  return (
    <form class="properties" aria-label="Quotas" onSubmit={submitTo(save, setError)}>
      <h3>Completion quotas</h3>
      {quotas.length === 0 && <p class="muted">No quotas: completions are not limited.</p>}
      {quotas.map((q, i) => {
        const id = (field: string) => `q${i}-${field}`;
        const number = (
          field: 'metric_limit' | 'metric_window_seconds' | 'lockout_duration_seconds',
          label: string,
          min: number,
        ) => (
          <div>
            <label for={id(field)}>{label}</label>
            <input
              id={id(field)}
              type="number"
              min={min}
              step={1}
              required
              value={q[field]}
              onInput={(e) => change(i, { [field]: e.currentTarget.valueAsNumber })}
            />
          </div>
        );
        return (
          <fieldset key={i} class="quota">
            <legend>Quota {i + 1}</legend>
            <div>
              <label for={id('name')}>Name</label>
              <input
                id={id('name')}
                required
                value={q.name}
                onInput={(e) => change(i, { name: e.currentTarget.value })}
              />
            </div>
            <div>
              <label for={id('agent')}>Applies to</label>
              <select
                id={id('agent')}
                value={agentOf(q)}
                onChange={(e) =>
                  change(i, { context: e.currentTarget.value ? `${ALL_AGENTS}:${e.currentTarget.value}` : ALL_AGENTS })
                }
              >
                <option value="">All agents</option>
                {[...new Set([...agents, agentOf(q)].filter(Boolean))].map((a) => (
                  <option key={a} value={a}>
                    Agent {a}
                  </option>
                ))}
              </select>
            </div>
            <div>
              <label for={id('metric')}>Counts</label>
              <select
                id={id('metric')}
                value={q.metric}
                onChange={(e) => change(i, { metric: e.currentTarget.value as Quota['metric'] })}
              >
                <option value="requests">requests</option>
                <option value="tokens">tokens of completed calls</option>
              </select>
            </div>
            <div>
              <label for={id('partition')}>Per</label>
              <select
                id={id('partition')}
                value={q.metric_partition}
                onChange={(e) => change(i, { metric_partition: e.currentTarget.value as Quota['metric_partition'] })}
              >
                {PARTITIONS.map(([value, label]) => (
                  <option key={value} value={value}>
                    {label}
                  </option>
                ))}
              </select>
            </div>
            {number('metric_limit', 'Limit', 1)}
            {number('metric_window_seconds', 'Window (seconds)', 1)}
            {number('lockout_duration_seconds', 'Lockout once exceeded (seconds)', 0)}
            <div>
              <label for={id('description')}>Description</label>
              <input
                id={id('description')}
                value={q.description ?? ''}
                onInput={(e) => change(i, { description: e.currentTarget.value || undefined })}
              />
            </div>
            <button
              type="button"
              class="link"
              aria-label={`Remove quota ${i + 1}`}
              onClick={() => setQuotas(quotas.filter((_, j) => j !== i))}
            >
              Remove
            </button>
          </fieldset>
        );
      })}
      <ErrorText error={error} />
      <div class="row">
        <button type="button" onClick={() => setQuotas([...quotas, fresh()])}>
          Add quota
        </button>
        <button type="submit">Save quotas</button>
        {saved && <span role="status"> Saved.</span>}
      </div>
    </form>
  );
}

const BUDGET_KEY = 'Svc:Budgets';

/** A budget as the Svc:Budgets setting holds it. */
interface Budget {
  name: string;
  description?: string;
  scope: 'instance' | 'agent' | 'user' | 'cost_center' | 'access_token';
  agent_name?: string;
  cost_center?: string;
  limit: number;
  currency: string;
  period: 'day' | 'week' | 'month';
}

const SCOPES = [
  ['instance', 'every call'],
  ['agent', 'one agent'],
  ['user', 'each user'],
  ['cost_center', 'one cost center'],
  ['access_token', 'each agent access token'],
] as const;

/** A budget changed to another scope keeps only the fields that scope takes. */
function scoped(b: Budget, scope: Budget['scope']): Budget {
  const { agent_name: agent, cost_center: center, ...rest } = b;
  return {
    ...rest,
    scope,
    ...(scope !== 'instance' && scope !== 'cost_center' && agent ? { agent_name: agent } : {}),
    ...(scope === 'cost_center' ? { cost_center: center ?? '' } : {}),
  };
}

/** The budgets as a list of definitions to edit, add and remove; saved together as the JSON Svc:Budgets holds. */
export function BudgetsForm({ ctx, onSaved }: { ctx: Context; onSaved: () => void }) {
  const {
    list: budgets,
    setList: setBudgets,
    agents,
    error,
    setError,
    saved,
    save,
    change,
  } = useListSetting<Budget>(ctx, BUDGET_KEY, 'budgets', onSaved);
  if (!budgets) return <ErrorText error={error} />;
  return (
    <form class="properties" aria-label="Budgets" onSubmit={submitTo(save, setError)}>
      <h3>Budgets</h3>
      {budgets.length === 0 && <p class="muted">No budgets: spend is not capped.</p>}
      {budgets.map((b, i) => {
        const id = (field: string) => `b${i}-${field}`;
        const agentChoice = b.scope === 'agent' || b.scope === 'user' || b.scope === 'access_token';
        return (
          <fieldset key={i} class="quota">
            <legend>Budget {i + 1}</legend>
            <div>
              <label for={id('name')}>Name</label>
              <input
                id={id('name')}
                required
                value={b.name}
                onInput={(e) => change(i, { name: e.currentTarget.value })}
              />
            </div>
            <div>
              <label for={id('scope')}>Caps</label>
              <select
                id={id('scope')}
                value={b.scope}
                onChange={(e) =>
                  setBudgets(budgets.map((x, j) => (j === i ? scoped(x, e.currentTarget.value as Budget['scope']) : x)))
                }
              >
                {SCOPES.map(([value, label]) => (
                  <option key={value} value={value}>
                    {label}
                  </option>
                ))}
              </select>
            </div>
            {agentChoice && (
              <div>
                <label for={id('agent')}>Agent</label>
                <select
                  id={id('agent')}
                  required={b.scope === 'agent'}
                  value={b.agent_name ?? ''}
                  onChange={(e) => change(i, { agent_name: e.currentTarget.value || undefined })}
                >
                  {b.scope !== 'agent' && <option value="">All agents</option>}
                  {b.scope === 'agent' && !b.agent_name && <option value="">Choose an agent</option>}
                  {[...new Set([...agents, b.agent_name ?? ''].filter(Boolean))].map((a) => (
                    <option key={a} value={a}>
                      {a}
                    </option>
                  ))}
                </select>
              </div>
            )}
            {b.scope === 'cost_center' && (
              <div>
                <label for={id('center')}>Cost center</label>
                <input
                  id={id('center')}
                  required
                  value={b.cost_center ?? ''}
                  onInput={(e) => change(i, { cost_center: e.currentTarget.value })}
                />
              </div>
            )}
            <div>
              <label for={id('limit')}>Limit</label>
              <input
                id={id('limit')}
                type="number"
                min={0}
                step="any"
                required
                value={b.limit}
                onInput={(e) => change(i, { limit: e.currentTarget.valueAsNumber })}
              />
            </div>
            <div>
              <label for={id('currency')}>Currency</label>
              <input
                id={id('currency')}
                required
                maxLength={3}
                value={b.currency}
                onInput={(e) => change(i, { currency: e.currentTarget.value.toUpperCase() })}
              />
            </div>
            <div>
              <label for={id('period')}>Per</label>
              <select
                id={id('period')}
                value={b.period}
                onChange={(e) => change(i, { period: e.currentTarget.value as Budget['period'] })}
              >
                <option value="day">day (UTC)</option>
                <option value="week">week (from Monday, UTC)</option>
                <option value="month">month (UTC)</option>
              </select>
            </div>
            <div>
              <label for={id('description')}>Description</label>
              <input
                id={id('description')}
                value={b.description ?? ''}
                onInput={(e) => change(i, { description: e.currentTarget.value || undefined })}
              />
            </div>
            <button
              type="button"
              class="link"
              aria-label={`Remove budget ${i + 1}`}
              onClick={() => setBudgets(budgets.filter((_, j) => j !== i))}
            >
              Remove
            </button>
          </fieldset>
        );
      })}
      <ErrorText error={error} />
      <div class="row">
        <button
          type="button"
          onClick={() =>
            setBudgets([...budgets, { name: '', scope: 'instance', limit: 100, currency: 'USD', period: 'month' }])
          }
        >
          Add budget
        </button>
        <button type="submit">Save budgets</button>
        {saved && <span role="status"> Saved.</span>}
      </div>
    </form>
  );
}
