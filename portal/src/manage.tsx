// The management portal: agents (their properties, access tokens), the resources agents are built from,
// role assignments, app configuration, plugin packages, and analytics. Every form sends what the
// Management API takes and shows the API's own validation messages.
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { BarChart } from './chart';
import { BrandingForm, QuotasForm } from './app-config';
import { DefinitionFields } from './definition-fields';
import { text, unwrap, type Resource } from './resource';
import { ErrorText, FilePicker, mount, saveAs, submitTo, type Context } from './shell';

/** Resource types with their list in the Management API, as the portal's sections show them. */
const TYPES = {
  agents: { title: 'Agents', path: 'Svc.Agent/agents', type: 'agent' },
  workflows: { title: 'Workflows', path: 'Svc.Agent/workflows', type: 'workflow' },
  prompts: { title: 'Prompts', path: 'Svc.Prompt/prompts', type: 'prompt' },
  models: { title: 'AI models', path: 'Svc.AIModel/aiModels', type: 'ai-model' },
  endpoints: { title: 'API endpoints', path: 'Svc.Configuration/apiEndpointConfigurations', type: 'api-endpoint' },
  dataSources: { title: 'Data sources', path: 'Svc.DataSource/dataSources', type: 'data-source' },
  pipelines: { title: 'Data pipelines', path: 'Svc.DataPipeline/dataPipelines', type: 'data-pipeline' },
  roleAssignments: { title: 'Role assignments', path: 'Svc.Authorization/roleAssignments', type: 'role-assignment' },
  appConfig: { title: 'App configuration', path: 'Svc.Configuration/appConfigurations', type: 'appconfiguration-key-value' },
} as const;

type Section = keyof typeof TYPES | 'packages' | 'analytics';

/** A row's details, as lists give them: the description, else a display name other than the name. */
const details = (r: Resource): string => text(r.description) || (r.display_name !== r.name ? text(r.display_name) : '');

/** A form whose submit runs `save` and shows why it failed, with submit and cancel buttons. */
function EditorForm({ save, submit, onCancel, children }: { save: () => Promise<void>; submit: string; onCancel: () => void; children: ComponentChildren }) {
  const [error, setError] = useState<unknown>();
  return (
    <form
      class="editor"
      onSubmit={submitTo(() => {
        setError(undefined);
        return save();
      }, setError)}
    >
      {children}
      <ErrorText error={error} />
      <div class="row">
        <button type="submit">{submit}</button>
        <button type="button" class="link" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

/** The JSON text as an object, or undefined while it is not one. */
function objectOf(json: string): Record<string, unknown> | undefined {
  try {
    const v = JSON.parse(json) as unknown;
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Fields the service keeps itself: not part of a definition to edit. */
const SERVICE_FIELDS = ['object_id', 'created_on', 'created_by', 'updated_on', 'updated_by', 'deleted'];

/**
 * A resource as JSON, created or replaced through the API (its validation messages shown as they come).
 * An existing one is read whole first: lists give only a summary.
 */
function Editor({ ctx, kind, initial, onSaved, onCancel }: { ctx: Context; kind: keyof typeof TYPES; initial: Resource | undefined; onSaved: () => void; onCancel: () => void }) {
  const path = TYPES[kind].path;
  const [name, setName] = useState(initial?.name ?? '');
  const [json, setJson] = useState(initial ? '' : '{}');
  const [error, setError] = useState<unknown>();
  useEffect(() => {
    if (!initial) return;
    ctx.api.json<Resource | { resource: Resource }>('management', `/providers/${path}/${encodeURIComponent(initial.name)}`).then((r) => {
      const definition = Object.fromEntries(Object.entries(unwrap(r)).filter(([field]) => !SERVICE_FIELDS.includes(field)));
      setJson(JSON.stringify(definition, null, 2));
    }, setError);
  }, [initial?.name]);
  if (initial && !json) return <ErrorText error={error} />;
  const save = async () => {
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(json) as Record<string, unknown>;
    } catch {
      throw new Error('The definition is not valid JSON');
    }
    await ctx.api.call('management', `/providers/${path}/${encodeURIComponent(name)}`, { method: 'POST', json: { ...body, name } });
    onSaved();
  };
  return (
    <EditorForm save={save} submit="Save" onCancel={onCancel}>
      <label for="resource-name">Name</label>
      <input id="resource-name" value={name} onInput={(e) => setName(e.currentTarget.value)} required readOnly={initial !== undefined} />
      <DefinitionFields ctx={ctx} kind={kind} definition={objectOf(json)} onChange={(d) => setJson(JSON.stringify(d, null, 2))} />
      <label for="resource-json">Definition (JSON)</label>
      <textarea id="resource-json" rows={14} spellcheck={false} value={json} onInput={(e) => setJson(e.currentTarget.value)} />
    </EditorForm>
  );
}

/**
 * A new role assignment: who (a principal's object id and kind), which built-in role (as the API lists them)
 * and where (the instance, or any resource's object id below it). The assignment's name is a new GUID.
 */
function RoleAssignmentForm({ ctx, onSaved, onCancel }: { ctx: Context; onSaved: () => void; onCancel: () => void }) {
  const [roles, setRoles] = useState<Resource[]>([]);
  const [form, setForm] = useState({ principal_id: '', principal_type: 'User', role_definition_id: '', scope: `/instances/${ctx.config.instance_id}` });
  const [error, setError] = useState<unknown>();
  useEffect(
    () =>
      void ctx.api.all<Resource | { resource: Resource }>('management', '/providers/Svc.Authorization/roleDefinitions').then((l) => {
        const all = l.map(unwrap);
        setRoles(all);
        setForm((f) => ({ ...f, role_definition_id: f.role_definition_id || text(all[0]?.object_id) }));
      }, setError),
    [],
  );
  const save = async () => {
    const name = crypto.randomUUID();
    await ctx.api.call('management', `/providers/Svc.Authorization/roleAssignments/${name}`, { method: 'POST', json: { type: 'role-assignment', name, ...form } });
    onSaved();
  };
  const set = (field: keyof typeof form) => (e: { currentTarget: HTMLInputElement | HTMLSelectElement }) => setForm({ ...form, [field]: e.currentTarget.value });
  return (
    <EditorForm save={save} submit="Assign" onCancel={onCancel}>
      <ErrorText error={error} />
      <label for="ra-principal">Principal (object id)</label>
      <input id="ra-principal" value={form.principal_id} onInput={set('principal_id')} required />
      <label for="ra-type">Principal type</label>
      <select id="ra-type" value={form.principal_type} onChange={set('principal_type')}>
        <option>User</option>
        <option>Group</option>
        <option>ServicePrincipal</option>
      </select>
      <label for="ra-role">Role</label>
      <select id="ra-role" value={form.role_definition_id} onChange={set('role_definition_id')}>
        {roles.map((r) => (
          <option key={r.name} value={text(r.object_id)}>
            {text(r.display_name)}
          </option>
        ))}
      </select>
      <label for="ra-scope">Scope (the instance, or a resource&apos;s object id)</label>
      <input id="ra-scope" value={form.scope} onInput={set('scope')} required />
    </EditorForm>
  );
}

const SHOW_FLAGS = ['show_message_tokens', 'show_message_rating', 'show_view_prompt', 'show_file_upload', 'show_content_artifacts'] as const;
const TEXT_PROPERTIES = [
  ['display_name', 'Display name'],
  ['description', 'Description'],
  ['cost_center', 'Cost center'],
  ['expiration_date', 'Expiration date (ISO 8601, e.g. 2027-01-31T00:00:00Z)'],
  ['owner_user_id', 'Owner (object id of a user)'],
] as const;
const SETTINGS = [
  ['conversation_history_settings', 'Conversation history settings'],
  ['text_rewrite_settings', 'Prompt rewrite settings'],
  ['cache_settings', 'Semantic cache settings'],
  ['shielding_settings', 'Shielding settings'],
  ['realtime_speech_settings', 'Realtime speech settings'],
] as const;

/** The form's values: text fields as typed, actions one per line, settings objects as JSON text. */
type Draft = Record<string, string | boolean>;

function draftOf(p: Record<string, unknown>): Draft {
  const d: Draft = {};
  for (const [n] of TEXT_PROPERTIES) d[n] = text(p[n]);
  d.inheritable_authorizable_actions = Array.isArray(p.inheritable_authorizable_actions) ? p.inheritable_authorizable_actions.join('\n') : '';
  for (const f of SHOW_FLAGS) d[f] = p[f] !== false;
  for (const [n] of SETTINGS) d[n] = p[n] === null || p[n] === undefined ? '' : JSON.stringify(p[n], null, 2);
  return d;
}

/** The properties whose value the form changed, as set-properties takes them (an emptied settings box clears it). */
function changesOf(loaded: Draft, draft: Draft): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [n, v] of Object.entries(draft)) {
    if (v === loaded[n]) continue;
    if (typeof v === 'boolean') out[n] = v;
    else if (n === 'inheritable_authorizable_actions') out[n] = v.split('\n').map((a) => a.trim()).filter(Boolean);
    else if (SETTINGS.some(([s]) => s === n)) {
      try {
        out[n] = v.trim() === '' ? null : (JSON.parse(v) as unknown);
      } catch {
        throw new Error(`${n}: not valid JSON`);
      }
    } else out[n] = v;
  }
  return out;
}

/**
 * Every writable agent property and the welcome message, read through get-properties and written
 * through set-properties: only what the form changed is sent, and the API's validation messages are shown.
 */
function AgentProperties({ ctx, agent }: { ctx: Context; agent: string }) {
  const base = `/providers/Svc.Agent/agents/${encodeURIComponent(agent)}`;
  const [loaded, setLoaded] = useState<Draft>();
  const [draft, setDraft] = useState<Draft>({});
  const [error, setError] = useState<unknown>();
  const [saved, setSaved] = useState(false);
  // get-properties refuses names the agent has no value for: the properties come from the resource itself.
  const read = () =>
    Promise.all([
      ctx.api.json<Resource | { resource: Resource }>('management', base),
      ctx.api.json<{ resource: { metadata_properties: Record<string, unknown> } }>('management', `${base}/get-properties`, { method: 'POST', json: { metadata_property_names: ['welcome_message'] } }),
    ]).then(([agentResource, r]) => {
      const d = { ...draftOf(unwrap(agentResource)), welcome_message: text(r.resource.metadata_properties.welcome_message) };
      setLoaded(d);
      setDraft(d);
    }, setError);
  useEffect(() => void read(), [agent]);
  if (!loaded) return <ErrorText error={error} />;
  const save = async () => {
    setSaved(false);
    setError(undefined);
    const { welcome_message: welcome, ...properties } = changesOf(loaded, draft);
    await ctx.api.call('management', `${base}/set-properties`, {
      method: 'POST',
      json: { properties, ...(welcome !== undefined ? { metadata_properties: { welcome_message: welcome || null } } : {}) },
    });
    await read();
    setSaved(true);
  };
  const field = (name: string) => ({ value: text(draft[name]), onInput: (e: { currentTarget: HTMLInputElement | HTMLTextAreaElement }) => setDraft({ ...draft, [name]: e.currentTarget.value }) });
  return (
    <form
      class="properties"
      onSubmit={submitTo(save, setError)}
    >
      <h3>Properties</h3>
      {TEXT_PROPERTIES.map(([n, label]) => (
        <div key={n}>
          <label for={`p-${n}`}>{label}</label>
          <input id={`p-${n}`} {...field(n)} />
        </div>
      ))}
      <label for="p-welcome">Welcome message</label>
      <textarea id="p-welcome" rows={2} {...field('welcome_message')} />
      <label for="p-actions">Inheritable authorizable actions (one per line)</label>
      <textarea id="p-actions" rows={2} {...field('inheritable_authorizable_actions')} />
      <fieldset>
        <legend>The chat portal shows</legend>
        {SHOW_FLAGS.map((f) => (
          <label key={f} class="check">
            <input type="checkbox" checked={draft[f] === true} onChange={(e) => setDraft({ ...draft, [f]: e.currentTarget.checked })} /> {f.replace(/^show_/, '').replace(/_/g, ' ')}
          </label>
        ))}
      </fieldset>
      {SETTINGS.map(([n, label]) => (
        <div key={n}>
          <label for={`p-${n}`}>{label} (JSON; empty clears)</label>
          <textarea id={`p-${n}`} rows={3} spellcheck={false} {...field(n)} />
        </div>
      ))}
      <ErrorText error={error} />
      <button type="submit">Save properties</button>
      {saved && <span role="status"> Saved.</span>}
    </form>
  );
}

interface TokenView {
  id: string;
  name: string;
  description?: string;
  expiration_date?: string;
  active?: boolean;
}

/** Agent access tokens: the secret is shown once, when it is made. */
function AgentTokens({ ctx, agent }: { ctx: Context; agent: string }) {
  const base = `/providers/Svc.Agent/agents/${encodeURIComponent(agent)}/agent-access-tokens`;
  const [tokens, setTokens] = useState<TokenView[]>([]);
  const [name, setName] = useState('');
  const [secret, setSecret] = useState<string>();
  const [error, setError] = useState<unknown>();
  const load = () => ctx.api.all<{ resource: TokenView }>('management', base).then((l) => setTokens(l.map((t) => t.resource)), setError);
  useEffect(() => void load(), [agent]);
  const create = async () => {
    const r = await ctx.api.json<{ resource: string }>('management', base, { method: 'POST', json: { type: 'agent-access-token', name } });
    setSecret(r.resource);
    setName('');
    await load();
  };
  return (
    <section aria-label="Access tokens">
      <h3>Access tokens</h3>
      {secret && (
        <div class="secret" role="status">
          <p>The new token, shown this once: copy it now.</p>
          <code class="token-secret">{secret}</code>
          <button class="link" onClick={() => setSecret(undefined)}>
            Done
          </button>
        </div>
      )}
      <ul>
        {tokens.map((t) => (
          <li key={t.id}>
            {t.name} {t.expiration_date && <span class="muted">expires {t.expiration_date}</span>}{' '}
            <button class="link" onClick={() => void ctx.api.call('management', `${base}/${t.id}`, { method: 'DELETE' }).then(load, setError)}>
              Revoke
            </button>
          </li>
        ))}
      </ul>
      <form
        class="row"
        onSubmit={submitTo(create, setError)}
      >
        <label for="token-name">Token name</label>
        <input id="token-name" value={name} onInput={(e) => setName(e.currentTarget.value)} required />
        <button type="submit">Issue token</button>
      </form>
      <ErrorText error={error} />
    </section>
  );
}

const RUN_FINISHED = new Set(['Completed', 'Failed']);

/** A run's counts as table text: documents, partitions and failed documents. */
const runCounts = (r: Resource): string => {
  const c = (r.counts ?? {}) as Record<string, unknown>;
  return `${text(c.documents) || 0} documents, ${text(c.partitions) || 0} partitions, ${text(c.failed_documents) || 0} failed`;
};

/**
 * The pipelines' runs, newest first. The list gives each run's name only: every run is read once, and
 * those not finished again every second until they are.
 */
function PipelineRuns({ ctx, refresh }: { ctx: Context; refresh: number }) {
  const [runs, setRuns] = useState<Resource[]>([]);
  const [error, setError] = useState<unknown>();
  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    let live = true;
    const path = '/providers/Svc.DataPipeline/dataPipelineRuns';
    const read = (name: string) => ctx.api.json<Resource | { resource: Resource }>('management', `${path}/${encodeURIComponent(name)}`).then(unwrap);
    const show = async (known: Resource[]) => {
      const all = await Promise.all(known.map((r) => (RUN_FINISHED.has(text(r.status)) ? Promise.resolve(r) : read(r.name))));
      if (!live) return;
      setRuns(all.sort((a, b) => text(b.started_on).localeCompare(text(a.started_on))));
      if (all.some((r) => !RUN_FINISHED.has(text(r.status)))) timer = setTimeout(() => void show(all).catch(setError), 1000);
    };
    ctx.api
      .all<Resource | { resource: Resource }>('management', path)
      .then((l) => show(l.map(unwrap)))
      .catch(setError);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [refresh]);
  return (
    <section aria-label="Pipeline runs">
      <h3>Runs</h3>
      <ErrorText error={error} />
      <table>
        <thead>
          <tr>
            <th>Run</th>
            <th>Pipeline</th>
            <th>Status</th>
            <th>Counts</th>
            <th>Errors</th>
          </tr>
        </thead>
        <tbody>
          {runs.map((r) => (
            <tr key={r.name}>
              <td>{r.name}</td>
              <td>{text(r.data_pipeline_object_id).split('/').pop()}</td>
              <td>{text(r.status)}</td>
              <td>{runCounts(r)}</td>
              <td class="muted">{Array.isArray(r.errors) ? (r.errors as { source?: unknown; message?: unknown }[]).map((e) => `${text(e.source)}: ${text(e.message)}`).join('; ') : ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

function Resources({ ctx, kind }: { ctx: Context; kind: keyof typeof TYPES }) {
  const t = TYPES[kind];
  const [items, setItems] = useState<Resource[]>([]);
  const [editing, setEditing] = useState<Resource | 'new'>();
  const [selected, setSelected] = useState<string>();
  const [runs, setRuns] = useState(0);
  const [showDeleted, setShowDeleted] = useState(false);
  const [error, setError] = useState<unknown>();
  const runPipeline = (r: Resource) => ctx.api.call('management', `/providers/${t.path}/${encodeURIComponent(r.name)}/process`, { method: 'POST' }).then(() => setRuns((n) => n + 1), setError);
  // Deleted resources are listed only when asked for: they can then be purged (and their names used again).
  const load = (deleted = showDeleted) =>
    ctx.api.all<Resource | { resource: Resource }>('management', `/providers/${t.path}${deleted ? '?includeDeleted=true' : ''}`).then((l) => setItems(l.map(unwrap).filter((r) => deleted || !r.deleted)), setError);
  useEffect(() => {
    setEditing(undefined);
    setSelected(undefined);
    void load();
  }, [kind]);
  const act = (r: Resource, question: string, path: string, method: string) => {
    if (confirm(question)) ctx.api.call('management', `/providers/${t.path}/${encodeURIComponent(r.name)}${path}`, { method }).then(() => load(), setError);
  };
  const remove = (r: Resource) => act(r, `Delete ${r.name}? It can be purged afterwards.`, '', 'DELETE');
  const purge = (r: Resource) => act(r, `Purge ${r.name} permanently? This cannot be undone.`, '/purge', 'POST');
  return (
    <section aria-label={t.title}>
      <h2>{t.title}</h2>
      <ErrorText error={error} />
      {editing === 'new' && kind === 'roleAssignments' ? (
        <RoleAssignmentForm
          ctx={ctx}
          onCancel={() => setEditing(undefined)}
          onSaved={() => {
            setEditing(undefined);
            void load();
          }}
        />
      ) : editing ? (
        <Editor
          ctx={ctx}
          kind={kind}
          initial={editing === 'new' ? undefined : editing}
          onCancel={() => setEditing(undefined)}
          onSaved={() => {
            setEditing(undefined);
            void load();
          }}
        />
      ) : (
        <>
          <div class="row">
            <button onClick={() => setEditing('new')}>New {t.title.replace(/s$/, '').toLowerCase()}</button>
            <label class="check">
              <input
                type="checkbox"
                checked={showDeleted}
                onChange={(e) => {
                  setShowDeleted(e.currentTarget.checked);
                  void load(e.currentTarget.checked);
                }}
              />{' '}
              Show deleted
            </label>
          </div>
          <table>
            <thead>
              <tr>
                <th>Name</th>
                <th>Details</th>
                <th>
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {items.map((r) => (
                <tr key={r.name}>
                  <td>{r.name}</td>
                  <td class="muted">{r.deleted ? 'Deleted' : details(r)}</td>
                  <td>
                    {r.deleted ? (
                      <button class="link" aria-label={`Purge ${r.name}`} onClick={() => purge(r)}>
                        Purge
                      </button>
                    ) : (
                      <>
                        {kind === 'agents' && (
                          <button class="link" onClick={() => setSelected(r.name)}>
                            Properties and tokens
                          </button>
                        )}
                        {kind === 'pipelines' && (
                          <button class="link" aria-label={`Process ${r.name}`} onClick={() => void runPipeline(r)}>
                            Process
                          </button>
                        )}
                        <button class="link" onClick={() => setEditing(r)}>
                          Edit
                        </button>
                        <button class="link" onClick={() => remove(r)}>
                          Delete
                        </button>
                      </>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
      {kind === 'agents' && selected && (
        <div class="agent-detail" aria-label={`Agent ${selected}`}>
          <h2>{selected}</h2>
          <AgentProperties ctx={ctx} agent={selected} />
          <AgentTokens ctx={ctx} agent={selected} />
        </div>
      )}
      {kind === 'pipelines' && <PipelineRuns ctx={ctx} refresh={runs} />}
      {kind === 'appConfig' && !editing && (
        <>
          <BrandingForm ctx={ctx} onSaved={() => void load()} />
          <QuotasForm ctx={ctx} onSaved={() => void load()} />
        </>
      )}
    </section>
  );
}

const PACKAGES = '/providers/Svc.Platform/pluginPackages';
/** Every call of the plugin APIs names their version. */
const API_VERSION = 'api-version=2024-02-16';

interface PackageVersion {
  package_version: string;
  file_name: string;
  size: number;
  sha256: string;
  source: string;
  uploaded_on: string;
  uploaded_by: string;
}

/** A package's versions, newest first, each downloadable as uploaded, and the plugins of the current one. */
function PackageVersions({ ctx, name }: { ctx: Context; name: string }) {
  const path = `${PACKAGES}/${encodeURIComponent(name)}`;
  const [pkg, setPkg] = useState<{ current_version: string; versions: PackageVersion[]; plugins: string[] }>();
  const [error, setError] = useState<unknown>();
  useEffect(() => void ctx.api.json<Resource | { resource: Resource }>('management', `${path}?${API_VERSION}`).then((r) => setPkg(unwrap(r) as unknown as typeof pkg), setError), [name]);
  const download = (v: PackageVersion) =>
    ctx.api
      .call('management', `${path}?${API_VERSION}&loadContent=true&version=${encodeURIComponent(v.package_version)}`)
      .then((r) => saveAs(r, v.file_name))
      .catch(setError);
  return (
    <section aria-label={`Versions of ${name}`}>
      <h3>{name}</h3>
      <ErrorText error={error} />
      {pkg && (
        <>
          <table>
            <thead>
              <tr>
                <th>Version</th>
                <th>Uploaded</th>
                <th>By</th>
                <th>Source</th>
                <th>Size</th>
                <th>SHA-256</th>
                <th>
                  <span class="visually-hidden">Download</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {[...pkg.versions].reverse().map((v) => (
                <tr key={v.package_version}>
                  <td>
                    {v.package_version}
                    {v.package_version === pkg.current_version ? ' (current)' : ''}
                  </td>
                  <td>{new Date(v.uploaded_on).toLocaleString()}</td>
                  <td>{v.uploaded_by}</td>
                  <td>{v.source}</td>
                  <td>{(v.size / 1024).toFixed(1)} KB</td>
                  <td class="muted">
                    <code title={v.sha256}>{v.sha256.slice(0, 12)}</code>
                  </td>
                  <td>
                    <button class="link" aria-label={`Download ${name} ${v.package_version}`} onClick={() => void download(v)}>
                      Download
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <p>Plugins of the current version: {pkg.plugins.join(', ') || 'none'}</p>
        </>
      )}
    </section>
  );
}

function Packages({ ctx }: { ctx: Context }) {
  const [items, setItems] = useState<Resource[]>([]);
  const [selected, setSelected] = useState<string>();
  const [shown, setShown] = useState(0);
  const [error, setError] = useState<unknown>();
  const [form, setForm] = useState({ name: '', runtime: 'Python', version: '1.0.0' });
  const load = () => ctx.api.all<Resource | { resource: Resource }>('management', `${PACKAGES}?${API_VERSION}`).then((l) => setItems(l.map(unwrap)), setError);
  useEffect(() => void load(), []);
  const upload = async (file: File) => {
    setError(undefined);
    const body = new FormData();
    body.set('file', file);
    body.set('resource', JSON.stringify({ type: 'plugin-package', name: form.name, package_runtime: form.runtime, package_version: form.version, package_store_type: 'Private' }));
    const name = `${form.runtime}-${form.name}`;
    await ctx.api.call('management', `${PACKAGES}/${encodeURIComponent(name)}?${API_VERSION}`, { method: 'POST', body });
    await load();
    setSelected(name);
    setShown((n) => n + 1);
  };
  return (
    <section aria-label="Plugin packages">
      <h2>Plugin packages</h2>
      <table>
        <thead>
          <tr>
            <th>Package</th>
            <th>Runtime</th>
            <th>Current version</th>
            <th>Versions</th>
            <th>
              <span class="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {items.map((p) => (
            <tr key={p.name}>
              <td>{p.name}</td>
              <td>{text(p.package_runtime)}</td>
              <td>{text(p.current_version)}</td>
              <td>{Array.isArray(p.versions) ? p.versions.length : ''}</td>
              <td>
                <button class="link" aria-label={`Versions of ${p.name}`} onClick={() => setSelected(p.name)}>
                  Versions
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <form class="row" onSubmit={(e) => e.preventDefault()}>
        <label for="pkg-name">Name</label>
        <input id="pkg-name" value={form.name} onInput={(e) => setForm({ ...form, name: e.currentTarget.value })} />
        <label for="pkg-runtime">Runtime</label>
        <select id="pkg-runtime" value={form.runtime} onChange={(e) => setForm({ ...form, runtime: e.currentTarget.value })}>
          <option>Python</option>
          <option>Dotnet</option>
        </select>
        <label for="pkg-version">Version</label>
        <input id="pkg-version" value={form.version} onInput={(e) => setForm({ ...form, version: e.currentTarget.value })} />
        <FilePicker id="pkg-file" label="Upload package file…" onFile={(file) => void upload(file).catch(setError)} />
      </form>
      <ErrorText error={error} />
      {selected && <PackageVersions key={`${selected}-${shown}`} ctx={ctx} name={selected} />}
    </section>
  );
}

const query = <T,>(ctx: Context, request_type: string, options: Record<string, unknown> = {}) =>
  ctx.api.json<{ resource: { data: T } }>('management', '/providers/Svc.Analytics/analytics/query?api-version=2024-02-16', { method: 'POST', json: { request_type, ...options } }).then((r) => r.resource.data);

interface Dashboard {
  agents: { agent_name: string; total_tokens: number }[];
  models: { model_deployment_name: string; total_tokens: number }[];
  users: { username: string; total_tokens: number }[];
}

function Analytics({ ctx }: { ctx: Context }) {
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

const SECTIONS: [Section, string][] = [...(Object.entries(TYPES) as [keyof typeof TYPES, { title: string }][]).map(([k, v]) => [k, v.title] as [Section, string]), ['packages', 'Plugin packages'], ['analytics', 'Analytics']];

/** The section the address names (#prompts), else agents. */
const sectionOf = (hash: string): Section => SECTIONS.find(([k]) => k === hash.slice(1))?.[0] ?? 'agents';

function Manage({ ctx }: { ctx: Context }) {
  const [section, setSection] = useState<Section>(sectionOf(location.hash));
  useEffect(() => {
    const onHash = () => setSection(sectionOf(location.hash));
    addEventListener('hashchange', onHash);
    return () => removeEventListener('hashchange', onHash);
  }, []);
  return (
    <div class="manage">
      <nav aria-label="Sections">
        <ul>
          {SECTIONS.map(([k, title]) => (
            <li key={k}>
              <a href={`#${k}`} aria-current={k === section ? 'page' : undefined}>
                {title}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <main>{section === 'packages' ? <Packages ctx={ctx} /> : section === 'analytics' ? <Analytics ctx={ctx} /> : <Resources ctx={ctx} kind={section} />}</main>
    </div>
  );
}

mount('Management', (ctx) => <Manage ctx={ctx} />);
