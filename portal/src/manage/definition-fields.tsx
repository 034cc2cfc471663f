// The common fields of each resource type as form controls over the JSON definition the editor holds: a
// prompt's text in text areas, a choice among the values the API takes, another resource picked by name.
// The JSON stays the one source: a control reads its field from it and writes the field back into it, so
// fields without a control (nested settings) are edited in the JSON and nothing is lost between the two.
import { useEffect, useState } from 'preact/hooks';
import { text, unwrap, type Resource } from '../resource';
import type { Context } from '../shell';

type Field =
  | { field: string; label: string; kind: 'text' | 'multiline' | 'number' | 'lines' }
  | { field: string; label: string; kind: 'choice'; options: readonly string[] }
  /** The object id of another resource, from the list at `path`. */
  | { field: string; label: string; kind: 'ref'; path: string };

const description: Field = { field: 'description', label: 'Description', kind: 'text' };
const MODELS = 'Svc.AIModel/aiModels';

/** Controls per resource type (keys of the portal's sections), in the order a form shows them. */
export const FIELDS: Record<string, readonly Field[]> = {
  agents: [{ field: 'display_name', label: 'Display name', kind: 'text' }, description, { field: 'workflow_object_id', label: 'Workflow', kind: 'ref', path: 'Svc.Agent/workflows' }],
  workflows: [
    description,
    { field: 'workflow_type', label: 'Workflow type', kind: 'choice', options: ['chat'] },
    { field: 'workflow_host', label: 'Workflow host', kind: 'choice', options: ['builtin'] },
    { field: 'main_ai_model_object_id', label: 'Main AI model', kind: 'ref', path: MODELS },
    { field: 'main_prompt_object_id', label: 'Main prompt', kind: 'ref', path: 'Svc.Prompt/prompts' },
  ],
  prompts: [description, { field: 'category', label: 'Category', kind: 'text' }, { field: 'prefix', label: 'Prefix (the system prompt)', kind: 'multiline' }, { field: 'suffix', label: 'Suffix', kind: 'multiline' }],
  models: [
    description,
    { field: 'model_type', label: 'Model type', kind: 'choice', options: ['completion', 'embedding'] },
    { field: 'deployment_name', label: 'Deployment name', kind: 'text' },
    { field: 'api_endpoint_object_id', label: 'API endpoint', kind: 'ref', path: 'Svc.Configuration/apiEndpointConfigurations' },
    { field: 'cost_per_1k_prompt_tokens', label: 'Cost per 1,000 prompt tokens', kind: 'number' },
    { field: 'cost_per_1k_completion_tokens', label: 'Cost per 1,000 completion tokens', kind: 'number' },
  ],
  endpoints: [
    description,
    { field: 'provider', label: 'Provider', kind: 'choice', options: ['openai', 'azure-openai', 'azure-content-safety'] },
    { field: 'url', label: 'URL', kind: 'text' },
    { field: 'api_version', label: 'API version', kind: 'text' },
    { field: 'authentication_type', label: 'Authentication', kind: 'choice', options: ['None', 'APIKey', 'AzureIdentity'] },
    { field: 'timeout_seconds', label: 'Timeout (seconds)', kind: 'number' },
  ],
  dataSources: [
    description,
    { field: 'data_source_type', label: 'Data source type', kind: 'choice', options: ['AzureBlob', 'AzureDataLake', 'SharePointOnline', 'Web'] },
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

/** A field's value as its control shows it. */
function shown(f: Field, v: unknown): string {
  if (f.kind === 'lines') return Array.isArray(v) ? v.map(text).join('\n') : '';
  return text(v);
}

/** A control's value as the definition holds it; undefined removes the field. */
function stored(f: Field, value: string): unknown {
  if (value.trim() === '') return undefined;
  if (f.kind === 'number') return Number(value);
  if (f.kind === 'lines') return value.split('\n').map((l) => l.trim()).filter(Boolean);
  return value;
}

/** The resources a `ref` control offers: their names and object ids. */
function useChoices(ctx: Context, paths: readonly string[]): Record<string, Resource[]> {
  const [choices, setChoices] = useState<Record<string, Resource[]>>({});
  useEffect(() => {
    for (const path of paths) {
      void ctx.api.all<Resource | { resource: Resource }>('management', `/providers/${path}`).then(
        (l) => setChoices((c) => ({ ...c, [path]: l.map(unwrap).filter((r) => !r.deleted) })),
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
function Control({ f, value, options, onValue }: { f: Field; value: unknown; options: { value: string; label: string }[]; onValue: (v: unknown) => void }) {
  const current = shown(f, value);
  const [typed, setTyped] = useState(current);
  const draft = shown(f, stored(f, typed)) === current ? typed : current;
  const id = `f-${f.field}`;
  const onInput = (e: { currentTarget: HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement }) => {
    setTyped(e.currentTarget.value);
    onValue(stored(f, e.currentTarget.value));
  };
  const wide = f.kind === 'multiline' || f.kind === 'lines';
  return (
    <div class={wide ? 'wide' : undefined}>
      <label for={id}>{f.label}</label>
      {wide ? (
        <textarea id={id} rows={f.kind === 'multiline' ? 5 : 3} value={draft} onInput={onInput} />
      ) : f.kind === 'choice' || f.kind === 'ref' ? (
        <select id={id} value={draft} onChange={onInput}>
          <option value="">(none)</option>
          {(options.some((o) => o.value === draft) || !draft ? options : [...options, { value: draft, label: draft }]).map((o) => (
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
export function DefinitionFields({ ctx, kind, definition, onChange }: { ctx: Context; kind: string; definition: Record<string, unknown> | undefined; onChange: (d: Record<string, unknown>) => void }) {
  const fields = FIELDS[kind] ?? [];
  const choices = useChoices(
    ctx,
    fields.flatMap((f) => (f.kind === 'ref' ? [f.path] : [])),
  );
  if (fields.length === 0) return null;
  const optionsOf = (f: Field) =>
    f.kind === 'choice' ? f.options.map((o) => ({ value: o, label: o })) : f.kind === 'ref' ? (choices[f.path] ?? []).map((r) => ({ value: text(r.object_id), label: r.name })) : [];
  return (
    <fieldset class="definition-fields" disabled={!definition}>
      <legend>{definition ? 'Fields' : 'Fields (fix the JSON below to use them)'}</legend>
      {fields.map((f) => (
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
