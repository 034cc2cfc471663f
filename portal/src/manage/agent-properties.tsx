// An agent's properties, read through get-properties and written through set-properties.
import { useEffect, useState } from 'preact/hooks';
import { type Resource, text, unwrap } from '../resource';
import { type Context, ErrorText, submitTo } from '../shell';
export const SHOW_FLAGS = ['show_message_tokens', 'show_message_rating', 'show_view_prompt', 'show_file_upload', 'show_content_artifacts'] as const;
export const TEXT_PROPERTIES = [
  ['display_name', 'Display name'],
  ['description', 'Description'],
  ['cost_center', 'Cost center'],
  ['expiration_date', 'Expiration date (ISO 8601, e.g. 2027-01-31T00:00:00Z)'],
  ['owner_user_id', 'Owner (object id of a user)'],
] as const;
export const SETTINGS = [
  ['conversation_history_settings', 'Conversation history settings'],
  ['text_rewrite_settings', 'Prompt rewrite settings'],
  ['cache_settings', 'Semantic cache settings'],
  ['shielding_settings', 'Shielding settings'],
  ['realtime_speech_settings', 'Realtime speech settings'],
] as const;

/** The form's values: text fields as typed, actions one per line, settings objects as JSON text. */
export type Draft = Record<string, string | boolean>;

export function draftOf(p: Record<string, unknown>): Draft {
  const d: Draft = {};
  for (const [n] of TEXT_PROPERTIES) d[n] = text(p[n]);
  d.inheritable_authorizable_actions = Array.isArray(p.inheritable_authorizable_actions) ? p.inheritable_authorizable_actions.join('\n') : '';
  for (const f of SHOW_FLAGS) d[f] = p[f] !== false;
  for (const [n] of SETTINGS) d[n] = p[n] === null || p[n] === undefined ? '' : JSON.stringify(p[n], null, 2);
  return d;
}

/** The properties whose value the form changed, as set-properties takes them (an emptied settings box clears it). */
export function changesOf(loaded: Draft, draft: Draft): Record<string, unknown> {
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
export function AgentProperties({ ctx, agent }: { ctx: Context; agent: string }) {
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
