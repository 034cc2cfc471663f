// App configuration with forms of its own: the branding (Svc:Branding:*) and the completion quotas
// (Svc:Quota:Definitions; docs/configuration.md, Runtime settings). Each writes app configuration resources through the
// Management API, which checks them; its message is shown when it refuses one.
import { useEffect, useState } from 'preact/hooks';
import { ApiError } from '../api';
import { text, unwrap, type Resource } from '../resource';
import { ErrorText, submitTo, type Context } from '../shell';

const setting = (key: string) => `/providers/Svc.Configuration/appConfigurations/${encodeURIComponent(key)}`;

/** Writes one app configuration value. */
const write = (ctx: Context, key: string, value: string) => ctx.api.call('management', setting(key), { method: 'POST', json: { name: key, key, value } });

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
    ctx.api.json<Record<string, unknown>>('core', '/branding').then((b) => {
      const v = Object.fromEntries(BRANDING.map(([field]) => [field, text(b[field])]));
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
          <input id={`b-${field}`} value={values[field] ?? ''} onInput={(e) => setValues({ ...values, [field]: e.currentTarget.value })} />
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

const fresh = (): Quota => ({ name: '', context: ALL_AGENTS, metric: 'requests', metric_partition: 'UserPrincipalName', metric_limit: 60, metric_window_seconds: 60, lockout_duration_seconds: 0 });

/** The stored definitions: none when the key is absent or deleted. */
async function readQuotas(ctx: Context): Promise<Quota[]> {
  let stored: Resource;
  try {
    stored = unwrap(await ctx.api.json<Resource | { resource: Resource }>('management', setting(QUOTA_KEY)));
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return [];
    throw e;
  }
  if (stored.deleted) return [];
  try {
    const list = JSON.parse(text(stored.value)) as unknown;
    if (Array.isArray(list)) return list as Quota[];
  } catch {
    // Falls through: a value saved before the API checked it.
  }
  throw new Error(`The stored ${QUOTA_KEY} is not a list of quota definitions; saving replaces it`);
}

/**
 * The completion quotas as a list of definitions to edit, add and remove; saved together as the JSON
 * Svc:Quota:Definitions holds. An agent's quota names it from the agents the caller can list.
 */
export function QuotasForm({ ctx, onSaved }: { ctx: Context; onSaved: () => void }) {
  const [quotas, setQuotas] = useState<Quota[]>();
  const [agents, setAgents] = useState<string[]>([]);
  const [error, setError] = useState<unknown>();
  const [saved, setSaved] = useState(false);
  const read = () =>
    readQuotas(ctx).then(setQuotas, (e: unknown) => {
      setQuotas([]);
      setError(e);
    });
  useEffect(() => {
    void read();
    void ctx.api.all<Resource | { resource: Resource }>('management', '/providers/Svc.Agent/agents').then((l) => setAgents(l.map(unwrap).filter((a) => !a.deleted).map((a) => a.name)), setError);
  }, []);
  if (!quotas) return <ErrorText error={error} />;
  const change = (i: number, patch: Partial<Quota>) => setQuotas(quotas.map((q, j) => (j === i ? { ...q, ...patch } : q)));
  const save = async () => {
    setSaved(false);
    setError(undefined);
    await write(ctx, QUOTA_KEY, JSON.stringify(quotas));
    await read();
    setSaved(true);
    onSaved();
  };
  const agentOf = (q: Quota) => (q.context.startsWith(`${ALL_AGENTS}:`) ? q.context.slice(ALL_AGENTS.length + 1) : '');
  return (
    <form class="properties" aria-label="Quotas" onSubmit={submitTo(save, setError)}>
      <h3>Completion quotas</h3>
      {quotas.length === 0 && <p class="muted">No quotas: completions are not limited.</p>}
      {quotas.map((q, i) => {
        const id = (field: string) => `q${i}-${field}`;
        const number = (field: 'metric_limit' | 'metric_window_seconds' | 'lockout_duration_seconds', label: string, min: number) => (
          <div>
            <label for={id(field)}>{label}</label>
            <input id={id(field)} type="number" min={min} step={1} required value={q[field]} onInput={(e) => change(i, { [field]: e.currentTarget.valueAsNumber })} />
          </div>
        );
        return (
          <fieldset key={i} class="quota">
            <legend>Quota {i + 1}</legend>
            <div>
              <label for={id('name')}>Name</label>
              <input id={id('name')} required value={q.name} onInput={(e) => change(i, { name: e.currentTarget.value })} />
            </div>
            <div>
              <label for={id('agent')}>Applies to</label>
              <select id={id('agent')} value={agentOf(q)} onChange={(e) => change(i, { context: e.currentTarget.value ? `${ALL_AGENTS}:${e.currentTarget.value}` : ALL_AGENTS })}>
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
              <select id={id('metric')} value={q.metric} onChange={(e) => change(i, { metric: e.currentTarget.value as Quota['metric'] })}>
                <option value="requests">requests</option>
                <option value="tokens">tokens of completed calls</option>
              </select>
            </div>
            <div>
              <label for={id('partition')}>Per</label>
              <select id={id('partition')} value={q.metric_partition} onChange={(e) => change(i, { metric_partition: e.currentTarget.value as Quota['metric_partition'] })}>
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
              <input id={id('description')} value={q.description ?? ''} onInput={(e) => change(i, { description: e.currentTarget.value || undefined })} />
            </div>
            <button type="button" class="link" aria-label={`Remove quota ${i + 1}`} onClick={() => setQuotas(quotas.filter((_, j) => j !== i))}>
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
