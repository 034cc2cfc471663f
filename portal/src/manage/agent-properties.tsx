// An agent's properties, read from the agent and written through set-properties: every writable property as
// a field (the settings objects as their own small forms, with the models, prompts and plugins they link
// picked by name, and the owner found by name through the identity search). Only what the form changed is
// sent, and the API's validation messages are shown. The types are the API's own (the generated document).
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { answer } from '../api';
import { text, type Resource } from '../resource';
import type { Definition, SecurityPrincipal } from '../schemas';
import { ErrorText, submitTo, type Context } from '../shell';
import { type ListPath, listResources, PLUGINS, readResource } from './read-resources';

type Agent = Definition<'agents-upsert'>;
type History = NonNullable<Agent['conversation_history_settings']>;
type Rewrite = NonNullable<Agent['text_rewrite_settings']>;
type Cache = NonNullable<Agent['cache_settings']>;
type Shielding = NonNullable<Agent['shielding_settings']>;
type Speech = NonNullable<Agent['realtime_speech_settings']>;

/**
 * The agent's definition as the agent's answer has it. The document gives that answer's resource as an open
 * object; it is the definition agents-upsert takes (the service's fields besides).
 */
const agentOf = (resource: Record<string, unknown>) => resource as Agent;

export const SHOW_FLAGS = [
  'show_message_tokens',
  'show_message_rating',
  'show_view_prompt',
  'show_file_upload',
  'show_content_artifacts',
] as const;
const TEXT_PROPERTIES = [
  ['display_name', 'Display name'],
  ['description', 'Description'],
  ['cost_center', 'Cost center'],
  ['expiration_date', 'Expiration date (ISO 8601, e.g. 2027-01-31T00:00:00Z)'],
] as const;

/** The properties the form edits, as set-properties takes them (null clears a settings object). */
interface Draft {
  display_name: string;
  description: string;
  cost_center: string;
  expiration_date: string;
  owner_user_id: string;
  inheritable_authorizable_actions: string[];
  flags: Record<(typeof SHOW_FLAGS)[number], boolean>;
  welcome_message: string;
  conversation_history_settings: History | null;
  text_rewrite_settings: Rewrite | null;
  cache_settings: Cache | null;
  shielding_settings: Shielding | null;
  realtime_speech_settings: Speech | null;
}

const SETTINGS = [
  'conversation_history_settings',
  'text_rewrite_settings',
  'cache_settings',
  'shielding_settings',
  'realtime_speech_settings',
] as const;

function draftOf(a: Agent, welcome: string): Draft {
  return {
    display_name: a.display_name ?? '',
    description: a.description ?? '',
    cost_center: a.cost_center ?? '',
    expiration_date: a.expiration_date ?? '',
    owner_user_id: a.owner_user_id ?? '',
    inheritable_authorizable_actions: a.inheritable_authorizable_actions ?? [],
    flags: Object.fromEntries(SHOW_FLAGS.map((f) => [f, a[f] !== false])) as Draft['flags'],
    welcome_message: welcome,
    conversation_history_settings: a.conversation_history_settings ?? null,
    text_rewrite_settings: a.text_rewrite_settings ?? null,
    cache_settings: a.cache_settings ?? null,
    shielding_settings: a.shielding_settings ?? null,
    realtime_speech_settings: a.realtime_speech_settings ?? null,
  };
}

/** What changed between the loaded and the edited draft, as set-properties' `properties`. */
function changesOf(loaded: Draft, draft: Draft): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  for (const [n] of TEXT_PROPERTIES) if (draft[n] !== loaded[n]) out[n] = draft[n];
  if (draft.owner_user_id !== loaded.owner_user_id) out.owner_user_id = draft.owner_user_id;
  if (!same(draft.inheritable_authorizable_actions, loaded.inheritable_authorizable_actions))
    out.inheritable_authorizable_actions = draft.inheritable_authorizable_actions;
  for (const f of SHOW_FLAGS) if (draft.flags[f] !== loaded.flags[f]) out[f] = draft.flags[f];
  for (const s of SETTINGS) if (!same(draft[s], loaded[s])) out[s] = draft[s];
  return out;
}

/**
 * Resources of a type for pickers, by object id and name; `full` reads each one's whole definition (a list
 * shows only names, and a model picker needs each model's type).
 */
function useResources(ctx: Context, path: ListPath, full = false): Resource[] {
  const [list, setList] = useState<Resource[]>([]);
  useEffect(() => {
    void listResources(ctx.api, path)
      .then((l) => l.filter((r) => !r.deleted))
      .then((l) => (full && path !== PLUGINS ? Promise.all(l.map((r) => readResource(ctx.api, path, r.name))) : l))
      .then(setList, () => undefined); // A list the caller may not read: the picker stays empty.
  }, [path]);
  return list;
}

function Picker({
  id,
  label,
  value,
  options,
  onChange,
}: {
  id: string;
  label: string;
  value: string;
  options: { value: string; label: string }[];
  onChange: (v: string) => void;
}) {
  const shown = options.some((o) => o.value === value) || !value ? options : [...options, { value, label: value }];
  return (
    <div>
      <label for={id}>{label}</label>
      <select id={id} value={value} onChange={(e) => onChange(e.currentTarget.value)}>
        <option value="">(choose)</option>
        {shown.map((o) => (
          <option key={o.value} value={o.value}>
            {o.label}
          </option>
        ))}
      </select>
    </div>
  );
}

function NumberField({
  id,
  label,
  value,
  onChange,
}: {
  id: string;
  label: string;
  value: number | undefined;
  onChange: (v: number | undefined) => void;
}) {
  return (
    <div>
      <label for={id}>{label}</label>
      <input
        id={id}
        type="number"
        step="any"
        value={value ?? ''}
        onInput={(e) => onChange(e.currentTarget.value === '' ? undefined : Number(e.currentTarget.value))}
      />
    </div>
  );
}

/** A settings object: a box that turns it on (an object) or off (null), and its fields while it is on. */
function Setting<T>({
  id,
  legend,
  value,
  fresh,
  onChange,
  children,
}: {
  id: string;
  legend: string;
  value: T | null;
  fresh: () => T;
  onChange: (v: T | null) => void;
  children: (v: T) => ComponentChildren;
}) {
  return (
    <fieldset class="setting">
      <legend>
        <label class="check">
          <input
            id={id}
            type="checkbox"
            checked={value !== null}
            onChange={(e) => onChange(e.currentTarget.checked ? (value ?? fresh()) : null)}
          />{' '}
          {legend}
        </label>
      </legend>
      {value !== null && children(value)}
    </fieldset>
  );
}

const options = (list: Resource[], keep: (r: Resource) => boolean = () => true) =>
  list.filter(keep).map((r) => ({ value: text(r.object_id), label: text(r.display_name) || r.name }));

/** The owner: shown by name, changed by searching users through the identity search. */
function OwnerField({ ctx, value, onChange }: { ctx: Context; value: string; onChange: (id: string) => void }) {
  const [search, setSearch] = useState('');
  const [found, setFound] = useState<SecurityPrincipal[]>([]);
  const [error, setError] = useState<unknown>();
  const [names, setNames] = useState<Record<string, string>>({});
  const find = async (term: string) => {
    const list = await answer(
      ctx.api.management.GET('/identity/securityPrincipals', { params: { query: { search: term } } }),
    );
    return list.filter((p) => p.principal_type === 'User');
  };
  // The current owner's name, when the directory knows it.
  useEffect(() => {
    if (value && !names[value])
      void find(value).then(
        (l) => l[0] && setNames((n) => ({ ...n, [value]: l[0]?.display_name ?? l[0]?.upn ?? value })),
        () => undefined,
      );
  }, [value]);
  return (
    <fieldset class="owner">
      <legend>Owner: {names[value] ?? (value || '(none)')}</legend>
      <label for="p-owner-search">Find a user by name, UPN or id</label>
      <input id="p-owner-search" value={search} onInput={(e) => setSearch(e.currentTarget.value)} />
      <button type="button" onClick={() => void find(search).then(setFound, setError)} disabled={search.trim() === ''}>
        Search
      </button>
      <ErrorText error={error} />
      <ul class="choices">
        {found.map((p) => (
          <li key={p.id}>
            <button
              type="button"
              onClick={() => {
                setNames((n) => ({ ...n, [p.id]: p.display_name ?? p.upn ?? p.id }));
                onChange(p.id);
                setFound([]);
              }}
            >
              Make {p.display_name ?? p.upn ?? p.id} the owner
            </button>
          </li>
        ))}
      </ul>
    </fieldset>
  );
}

/** Every writable agent property and the welcome message. */
export function AgentProperties({ ctx, agent }: { ctx: Context; agent: string }) {
  const [loaded, setLoaded] = useState<Draft>();
  const [draft, setDraft] = useState<Draft>();
  const [error, setError] = useState<unknown>();
  const [saved, setSaved] = useState(false);
  const models = useResources(ctx, 'Svc.AIModel/aiModels', true);
  const prompts = useResources(ctx, 'Svc.Prompt/prompts');
  const plugins = useResources(ctx, PLUGINS);
  // get-properties refuses names the agent has no value for: the properties come from the resource itself.
  const read = () =>
    Promise.all([
      answer(ctx.api.management.GET('/providers/Svc.Agent/agents/{name}', { params: { path: { name: agent } } })),
      answer(
        ctx.api.management.POST('/providers/Svc.Agent/agents/{agentName}/get-properties', {
          params: { path: { agentName: agent } },
          body: { metadata_property_names: ['welcome_message'] },
        }),
      ),
    ]).then(([a, r]) => {
      const d = draftOf(agentOf(a.resource), text(r.resource.metadata_properties.welcome_message));
      setLoaded(d);
      setDraft(d);
    }, setError);
  useEffect(() => void read(), [agent]);
  if (!loaded || !draft) return <ErrorText error={error} />;
  const set = (change: Partial<Draft>) => setDraft({ ...draft, ...change });
  const save = async () => {
    setSaved(false);
    setError(undefined);
    const properties = changesOf(loaded, draft);
    const welcome =
      draft.welcome_message !== loaded.welcome_message
        ? { metadata_properties: { welcome_message: draft.welcome_message || null } }
        : {};
    await ctx.api.management.POST('/providers/Svc.Agent/agents/{agentName}/set-properties', {
      params: { path: { agentName: agent } },
      body: { properties, ...welcome },
    });
    await read();
    setSaved(true);
  };
  const completion = options(models, (m) => m.model_type === 'completion');
  const embedding = options(models, (m) => m.model_type === 'embedding');
  const realtime = options(models, (m) => m.model_type === 'realtime');
  const pluginNames = plugins.map((p) => p.name);
  const rewrite = draft.text_rewrite_settings;
  const cache = draft.cache_settings;
  return (
    <form class="properties" onSubmit={submitTo(save, setError)}>
      <h3>Properties</h3>
      {TEXT_PROPERTIES.map(([n, label]) => (
        <div key={n}>
          <label for={`p-${n}`}>{label}</label>
          <input id={`p-${n}`} value={draft[n]} onInput={(e) => set({ [n]: e.currentTarget.value })} />
        </div>
      ))}
      <OwnerField ctx={ctx} value={draft.owner_user_id} onChange={(owner_user_id) => set({ owner_user_id })} />
      <label for="p-welcome">Welcome message</label>
      <textarea
        id="p-welcome"
        rows={2}
        value={draft.welcome_message}
        onInput={(e) => set({ welcome_message: e.currentTarget.value })}
      />
      <label for="p-actions">Inheritable authorizable actions (one per line)</label>
      <textarea
        id="p-actions"
        rows={2}
        value={draft.inheritable_authorizable_actions.join('\n')}
        onInput={(e) =>
          set({
            inheritable_authorizable_actions: e.currentTarget.value
              .split('\n')
              .map((a) => a.trim())
              .filter(Boolean),
          })
        }
      />
      <fieldset>
        <legend>The chat portal shows</legend>
        {SHOW_FLAGS.map((f) => (
          <label key={f} class="check">
            <input
              type="checkbox"
              checked={draft.flags[f]}
              onChange={(e) => set({ flags: { ...draft.flags, [f]: e.currentTarget.checked } })}
            />{' '}
            {f.replace(/^show_/, '').replace(/_/g, ' ')}
          </label>
        ))}
      </fieldset>

      <Setting
        id="p-history"
        legend="Conversation history"
        value={draft.conversation_history_settings}
        fresh={() => ({ enabled: true, max_history: 10 })}
        onChange={(v) => set({ conversation_history_settings: v })}
      >
        {(h) => (
          <>
            <label class="check">
              <input
                type="checkbox"
                checked={h.enabled}
                onChange={(e) => set({ conversation_history_settings: { ...h, enabled: e.currentTarget.checked } })}
              />{' '}
              send earlier turns to the model
            </label>
            <NumberField
              id="p-history-max"
              label="Turns sent (max_history)"
              value={h.max_history}
              onChange={(v) => set({ conversation_history_settings: { ...h, max_history: v ?? 0 } })}
            />
          </>
        )}
      </Setting>

      <Setting
        id="p-rewrite"
        legend="Prompt rewrite"
        value={rewrite}
        fresh={() => ({
          user_prompt_rewrite_enabled: true,
          user_prompt_rewrite_settings: {
            user_prompt_rewrite_ai_model_object_id: '',
            user_prompt_rewrite_prompt_object_id: '',
            user_prompts_window_size: 3,
          },
        })}
        onChange={(v) => set({ text_rewrite_settings: v })}
      >
        {(r) => {
          const s = r.user_prompt_rewrite_settings ?? {
            user_prompt_rewrite_ai_model_object_id: '',
            user_prompt_rewrite_prompt_object_id: '',
            user_prompts_window_size: 3,
          };
          const put = (change: Partial<typeof s>) =>
            set({
              text_rewrite_settings: {
                user_prompt_rewrite_enabled: true,
                user_prompt_rewrite_settings: { ...s, ...change },
              },
            });
          return (
            <>
              <Picker
                id="p-rewrite-model"
                label="Rewrite model (a completion model)"
                value={s.user_prompt_rewrite_ai_model_object_id}
                options={completion}
                onChange={(v) => put({ user_prompt_rewrite_ai_model_object_id: v })}
              />
              <Picker
                id="p-rewrite-prompt"
                label="Rewrite prompt"
                value={s.user_prompt_rewrite_prompt_object_id}
                options={options(prompts)}
                onChange={(v) => put({ user_prompt_rewrite_prompt_object_id: v })}
              />
              <NumberField
                id="p-rewrite-window"
                label="Earlier user prompts it reads"
                value={s.user_prompts_window_size}
                onChange={(v) => put({ user_prompts_window_size: v ?? 0 })}
              />
            </>
          );
        }}
      </Setting>

      <Setting
        id="p-cache"
        legend="Semantic cache"
        value={cache}
        fresh={() => ({
          semantic_cache_enabled: true,
          semantic_cache_settings: { embedding_ai_model_object_id: '', minimum_similarity_threshold: 0.975 },
        })}
        onChange={(v) => set({ cache_settings: v })}
      >
        {(c) => {
          const s = c.semantic_cache_settings ?? {
            embedding_ai_model_object_id: '',
            minimum_similarity_threshold: 0.975,
          };
          const put = (change: Partial<typeof s>) =>
            set({ cache_settings: { semantic_cache_enabled: true, semantic_cache_settings: { ...s, ...change } } });
          return (
            <>
              <Picker
                id="p-cache-model"
                label="Embedding model"
                value={s.embedding_ai_model_object_id}
                options={embedding}
                onChange={(v) => put({ embedding_ai_model_object_id: v })}
              />
              <NumberField
                id="p-cache-dimensions"
                label="Embedding dimensions (empty: the model's)"
                value={s.embedding_dimensions}
                onChange={(v) => put({ embedding_dimensions: v })}
              />
              <NumberField
                id="p-cache-threshold"
                label="Minimum similarity (0 to 1)"
                value={s.minimum_similarity_threshold}
                onChange={(v) => put({ minimum_similarity_threshold: v })}
              />
            </>
          );
        }}
      </Setting>

      <Setting
        id="p-shielding"
        legend="Shielding"
        value={draft.shielding_settings}
        fresh={() => ({ pre_completion_plugins: [], post_completion_plugins: [] })}
        onChange={(v) => set({ shielding_settings: v })}
      >
        {(sh) => (
          <>
            {(['pre_completion_plugins', 'post_completion_plugins'] as const).map((stage) => (
              <fieldset key={stage}>
                <legend>
                  {stage === 'pre_completion_plugins' ? 'Screen the prompt with' : 'Screen the answer with'}
                </legend>
                {[...new Set([...pluginNames, ...(sh[stage] ?? []).map((p) => p.plugin_name)])].map((name) => (
                  <label key={name} class="check">
                    <input
                      type="checkbox"
                      checked={(sh[stage] ?? []).some((p) => p.plugin_name === name)}
                      onChange={(e) => {
                        const rest = (sh[stage] ?? []).filter((p) => p.plugin_name !== name);
                        set({
                          shielding_settings: {
                            ...sh,
                            [stage]: e.currentTarget.checked ? [...rest, { plugin_name: name }] : rest,
                          },
                        });
                      }}
                    />{' '}
                    {name}
                  </label>
                ))}
              </fieldset>
            ))}
          </>
        )}
      </Setting>

      <Setting
        id="p-speech"
        legend="Realtime speech"
        value={draft.realtime_speech_settings}
        fresh={() => ({ enabled: true, realtime_speech_ai_model_object_id: '' })}
        onChange={(v) => set({ realtime_speech_settings: v })}
      >
        {(sp) => {
          const put = (change: Partial<Speech>) => set({ realtime_speech_settings: { ...sp, ...change } });
          return (
            <>
              <label class="check">
                <input
                  type="checkbox"
                  checked={sp.enabled ?? true}
                  onChange={(e) => put({ enabled: e.currentTarget.checked })}
                />{' '}
                enabled
              </label>
              <Picker
                id="p-speech-model"
                label="Realtime speech model"
                value={sp.realtime_speech_ai_model_object_id}
                options={realtime}
                onChange={(v) => put({ realtime_speech_ai_model_object_id: v })}
              />
              <label for="p-speech-stop">Stop words (one per line)</label>
              <textarea
                id="p-speech-stop"
                rows={2}
                value={(sp.stop_words ?? []).join('\n')}
                onInput={(e) =>
                  put({
                    stop_words: e.currentTarget.value
                      .split('\n')
                      .map((w) => w.trim())
                      .filter(Boolean),
                  })
                }
              />
              <NumberField
                id="p-speech-max"
                label="Longest session (seconds; 0: no limit)"
                value={sp.max_session_duration_seconds}
                onChange={(v) => put({ max_session_duration_seconds: v ?? 0 })}
              />
              <label class="check">
                <input
                  type="checkbox"
                  checked={sp.show_transcriptions ?? true}
                  onChange={(e) => put({ show_transcriptions: e.currentTarget.checked })}
                />{' '}
                show transcriptions
              </label>
              <label class="check">
                <input
                  type="checkbox"
                  checked={sp.include_conversation_history ?? true}
                  onChange={(e) => put({ include_conversation_history: e.currentTarget.checked })}
                />{' '}
                include the conversation history
              </label>
              <label for="p-speech-voice">Voice</label>
              <input
                id="p-speech-voice"
                value={sp.voice ?? 'alloy'}
                onInput={(e) => put({ voice: e.currentTarget.value })}
              />
            </>
          );
        }}
      </Setting>

      <ErrorText error={error} />
      <button type="submit">Save properties</button>
      {saved && <span role="status"> Saved.</span>}
    </form>
  );
}
