// The common fields of each resource type as form controls over the JSON definition the editor holds: a
// prompt's text in text areas, a choice among the values the API takes, another resource picked by name.
// The JSON stays the one source: a control reads its field from it and writes the field back into it, so
// fields without a control (nested settings) are edited in the JSON and nothing is lost between the two.
import { useEffect, useState } from 'preact/hooks';
import { text, type Resource } from '../resource';
import type { Context } from '../shell';
import { type ListPath, listResources, PLUGINS } from './read-resources';

/** A field shown only while another field of the definition has one of these values (a tool's type). */
type When = { when?: { field: string; values: readonly string[] } };

type Field = When &
  (
    | { field: string; label: string; kind: 'text' | 'multiline' | 'number' | 'lines' }
    | { field: string; label: string; kind: 'choice'; options: readonly string[] }
    /** The object id of another resource (or several: `refs`), from the list at `path`, those `pick` keeps. */
    | { field: string; label: string; kind: 'ref' | 'refs'; path: ListPath; pick?: (r: Resource) => boolean }
  );

const description: Field = { field: 'description', label: 'Description', kind: 'text' };
const MODELS = 'Svc.AIModel/aiModels';
const only = (field: string, ...values: string[]) => ({ when: { field, values } });
const ofCategory = (category: string) => (r: Resource) =>
  r.category === category && !text(r.name).startsWith('Dotnet-');

/** Controls per resource type (keys of the portal's sections), in the order a form shows them. */
export const FIELDS: Record<string, readonly Field[]> = {
  agents: [
    { field: 'display_name', label: 'Display name', kind: 'text' },
    description,
    { field: 'workflow_object_id', label: 'Workflow', kind: 'ref', path: 'Svc.Agent/workflows' },
    { field: 'tool_object_ids', label: 'Tools', kind: 'refs', path: 'Svc.Agent/tools' },
  ],
  workflows: [
    description,
    { field: 'workflow_type', label: 'Workflow type', kind: 'choice', options: ['chat', 'external'] },
    { field: 'workflow_host', label: 'Workflow host', kind: 'choice', options: ['builtin'] },
    {
      field: 'main_ai_model_object_id',
      label: 'Main AI model',
      kind: 'ref',
      path: MODELS,
      ...only('workflow_type', 'chat'),
    },
    {
      field: 'main_prompt_object_id',
      label: 'Main prompt',
      kind: 'ref',
      path: 'Svc.Prompt/prompts',
      ...only('workflow_type', 'chat'),
    },
    {
      field: 'plugin_object_id',
      label: 'Workflow plugin',
      kind: 'ref',
      path: PLUGINS,
      pick: ofCategory('agent workflow'),
      ...only('workflow_type', 'external'),
    },
  ],
  tools: [
    description,
    {
      field: 'tool_type',
      label: 'Tool type',
      kind: 'choice',
      options: ['knowledge', 'mcp', 'plugin', 'code-interpreter'],
    },
    { field: 'index_name', label: 'Knowledge index', kind: 'text', ...only('tool_type', 'knowledge') },
    {
      field: 'retrieval',
      label: 'Retrieval',
      kind: 'choice',
      options: ['always', 'on_demand'],
      ...only('tool_type', 'knowledge'),
    },
    { field: 'top_n', label: 'Passages retrieved', kind: 'number', ...only('tool_type', 'knowledge') },
    {
      field: 'url',
      label: 'Server URL (streamable HTTP, or platform://memory)',
      kind: 'text',
      ...only('tool_type', 'mcp'),
    },
    { field: 'allowed_tools', label: 'Allowed tools (one per line)', kind: 'lines', ...only('tool_type', 'mcp') },
    {
      field: 'authentication_type',
      label: 'Authentication',
      kind: 'choice',
      options: ['None', 'APIKey', 'AzureIdentity'],
      ...only('tool_type', 'mcp'),
    },
    {
      field: 'plugin_object_id',
      label: 'Tool plugin',
      kind: 'ref',
      path: PLUGINS,
      pick: ofCategory('agent tool'),
      ...only('tool_type', 'plugin'),
    },
  ],
  prompts: [
    description,
    { field: 'category', label: 'Category', kind: 'text' },
    { field: 'prefix', label: 'Prefix (the system prompt)', kind: 'multiline' },
    { field: 'suffix', label: 'Suffix', kind: 'multiline' },
  ],
  models: [
    description,
    { field: 'model_type', label: 'Model type', kind: 'choice', options: ['completion', 'embedding', 'realtime'] },
    { field: 'deployment_name', label: 'Deployment name', kind: 'text' },
    {
      field: 'api_endpoint_object_id',
      label: 'API endpoint',
      kind: 'ref',
      path: 'Svc.Configuration/apiEndpointConfigurations',
    },
    { field: 'cost_per_1k_prompt_tokens', label: 'Cost per 1,000 prompt tokens', kind: 'number' },
    { field: 'cost_per_1k_completion_tokens', label: 'Cost per 1,000 completion tokens', kind: 'number' },
  ],
  endpoints: [
    description,
    {
      field: 'provider',
      label: 'Provider',
      kind: 'choice',
      options: ['openai', 'azure-openai', 'azure-content-safety'],
    },
    { field: 'url', label: 'URL', kind: 'text' },
    { field: 'api_version', label: 'API version', kind: 'text' },
    {
      field: 'authentication_type',
      label: 'Authentication',
      kind: 'choice',
      options: ['None', 'APIKey', 'AzureIdentity'],
    },
    { field: 'timeout_seconds', label: 'Timeout (seconds)', kind: 'number' },
  ],
  dataSources: [
    description,
    {
      field: 'data_source_type',
      label: 'Data source type',
      kind: 'choice',
      options: ['AzureBlob', 'AzureDataLake', 'SharePointOnline', 'Web'],
    },
    { field: 'container', label: 'Blob container (AzureBlob)', kind: 'text' },
    { field: 'account_url', label: 'Storage account URL (AzureBlob; empty: the service’s own)', kind: 'text' },
    { field: 'urls', label: 'URL prefixes (Web; one per line)', kind: 'lines' },
  ],
  pipelines: [
    description,
    { field: 'data_source_object_id', label: 'Data source', kind: 'ref', path: 'Svc.DataSource/dataSources' },
    { field: 'source_paths', label: 'Source paths (one per line)', kind: 'lines' },
    { field: 'index_name', label: 'Index name', kind: 'text' },
    { field: 'embedding_ai_model_object_id', label: 'Embedding model', kind: 'ref', path: MODELS },
    { field: 'partition_size_tokens', label: 'Partition size (tokens)', kind: 'number' },
    { field: 'partition_overlap_tokens', label: 'Partition overlap (tokens)', kind: 'number' },
  ],
};

/** A field's value as its control shows it (`refs`: the object ids, one per line). */
function shown(f: Field, v: unknown): string {
  if (f.kind === 'lines' || f.kind === 'refs') return Array.isArray(v) ? v.map(text).join('\n') : '';
  return text(v);
}

/** A control's value as the definition holds it; undefined removes the field. */
function stored(f: Field, value: string): unknown {
  if (value.trim() === '') return undefined;
  if (f.kind === 'number') return Number(value);
  if (f.kind === 'lines' || f.kind === 'refs')
    return value
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean);
  return value;
}

/** The resources a `ref` control offers: their names and object ids. */
function useChoices(ctx: Context, paths: readonly ListPath[]): Partial<Record<ListPath, Resource[]>> {
  const [choices, setChoices] = useState<Partial<Record<ListPath, Resource[]>>>({});
  useEffect(() => {
    for (const path of paths) {
      void listResources(ctx.api, path).then(
        (l) => setChoices((c) => ({ ...c, [path]: l.filter((r) => !r.deleted) })),
        () => undefined, // A list the caller may not read: the object id can still be typed in the JSON.
      );
    }
  }, [paths.join()]);
  return choices;
}

/**
 * One control. It keeps what is typed (a trailing newline, `1.`) while that still means the definition's
 * value, and shows the definition's value again once the JSON changes it.
 */
function Control({
  f,
  value,
  options,
  onValue,
}: {
  f: Field;
  value: unknown;
  options: { value: string; label: string }[];
  onValue: (v: unknown) => void;
}) {
  const current = shown(f, value);
  const [typed, setTyped] = useState(current);
  const draft = shown(f, stored(f, typed)) === current ? typed : current;
  const id = `f-${f.field}`;
  const onInput = (e: { currentTarget: HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement }) => {
    setTyped(e.currentTarget.value);
    onValue(stored(f, e.currentTarget.value));
  };
  const wide = f.kind === 'multiline' || f.kind === 'lines' || f.kind === 'refs';
  if (f.kind === 'refs') {
    // One checkbox per resource; object ids in the definition that are not listed stay as they are.
    const chosen = draft.split('\n').filter(Boolean);
    const toggle = (value: string, on: boolean) => {
      const next = on ? [...chosen, value] : chosen.filter((c) => c !== value);
      setTyped(next.join('\n'));
      onValue(next.length > 0 ? next : undefined);
    };
    return (
      <fieldset class="wide refs">
        <legend>{f.label}</legend>
        {options.length === 0 && <span class="muted">None yet</span>}
        {options.map((o) => (
          <label key={o.value} class="check">
            <input
              type="checkbox"
              checked={chosen.includes(o.value)}
              onChange={(e) => toggle(o.value, e.currentTarget.checked)}
            />{' '}
            {o.label}
          </label>
        ))}
      </fieldset>
    );
  }
  return (
    <div class={wide ? 'wide' : undefined}>
      <label for={id}>{f.label}</label>
      {wide ? (
        <textarea id={id} rows={f.kind === 'multiline' ? 5 : 3} value={draft} onInput={onInput} />
      ) : f.kind === 'choice' || f.kind === 'ref' ? (
        <select id={id} value={draft} onChange={onInput}>
          <option value="">(none)</option>
          {(options.some((o) => o.value === draft) || !draft
            ? options
            : [...options, { value: draft, label: draft }]
          ).map((o) => (
            <option key={o.value} value={o.value}>
              {o.label}
            </option>
          ))}
        </select>
      ) : (
        <input id={id} type={f.kind === 'number' ? 'number' : 'text'} step="any" value={draft} onInput={onInput} />
      )}
    </div>
  );
}

/**
 * The controls of one resource type over `definition` (the parsed JSON; undefined while it does not parse,
 * when the controls are disabled). `onChange` gets the definition with the one field changed.
 */
export function DefinitionFields({
  ctx,
  kind,
  definition,
  onChange,
}: {
  ctx: Context;
  kind: string;
  definition: Record<string, unknown> | undefined;
  onChange: (d: Record<string, unknown>) => void;
}) {
  const fields = FIELDS[kind] ?? [];
  const choices = useChoices(
    ctx,
    fields.flatMap((f) => (f.kind === 'ref' || f.kind === 'refs' ? [f.path] : [])),
  );
  if (fields.length === 0) return null;
  const optionsOf = (f: Field) =>
    f.kind === 'choice'
      ? f.options.map((o) => ({ value: o, label: o }))
      : f.kind === 'ref' || f.kind === 'refs'
        ? (choices[f.path] ?? [])
            .filter((r) => !f.pick || f.pick(r))
            .map((r) => ({ value: text(r.object_id), label: r.name }))
        : [];
  const visible = fields.filter((f) => !f.when || f.when.values.includes(text(definition?.[f.when.field])));
  return (
    <fieldset class="definition-fields" disabled={!definition}>
      <legend>{definition ? 'Fields' : 'Fields (fix the JSON below to use them)'}</legend>
      {visible.map((f) => (
        <Control
          key={f.field}
          f={f}
          value={definition?.[f.field]}
          options={optionsOf(f)}
          onValue={(v) => {
            if (!definition) return;
            // An emptied control removes its field, as if it had never been written.
            const { [f.field]: _old, ...rest } = definition;
            onChange(v === undefined ? rest : { ...definition, [f.field]: v });
          }}
        />
      ))}
    </fieldset>
  );
}
