// The editor of one resource: its type's form fields over its whole JSON definition, the two kept one.
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { paths } from '../api-types/management';
import type { Resource } from '../resource';
import type { Definition } from '../schemas';
import { type Context, ErrorText, submitTo } from '../shell';
import { DefinitionFields } from './definition-fields';
import { readResource } from './read-resources';
import { type SectionPath, TYPES } from './types';
/** A form whose submit runs `save` and shows why it failed, with submit and cancel buttons. */
export function EditorForm({
  save,
  submit,
  onCancel,
  children,
}: {
  save: () => Promise<void>;
  submit: string;
  onCancel: () => void;
  children: ComponentChildren;
}) {
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
export function objectOf(json: string): Record<string, unknown> | undefined {
  try {
    const v = JSON.parse(json) as unknown;
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Fields the service sets (a definition may carry them back; they are ignored), checked against the API's types. */
export const SERVICE_FIELDS: readonly string[] = [
  'object_id',
  'created_on',
  'created_by',
  'updated_on',
  'updated_by',
  'deleted',
  'version',
] satisfies (keyof Definition<'prompts-upsert'>)[]; // any resource type's definition has them; a prompt's, here

/** What the upsert of a section's resource type takes. */
type Upsert = NonNullable<
  paths[`/instances/{instanceId}/providers/${SectionPath}/{name}`]['post']['requestBody']
>['content']['application/json'];

/**
 * A resource as JSON, created or replaced through the API (its validation messages shown as they come).
 * An existing one is read whole first: lists give only a summary.
 */
export function Editor({
  ctx,
  kind,
  initial,
  onSaved,
  onCancel,
}: {
  ctx: Context;
  kind: keyof typeof TYPES;
  initial: Resource | undefined;
  onSaved: () => void;
  onCancel: () => void;
}) {
  const path = TYPES[kind].path;
  const [name, setName] = useState(initial?.name ?? '');
  const [json, setJson] = useState(initial ? '' : '{}');
  const [error, setError] = useState<unknown>();
  useEffect(() => {
    if (!initial) return;
    readResource(ctx.api, path, initial.name).then((r) => {
      const definition = Object.fromEntries(Object.entries(r).filter(([field]) => !SERVICE_FIELDS.includes(field)));
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
    // Typed in by hand: the API checks the definition against its type's schema, and its message is shown.
    const definition = { ...body, name } as Upsert;
    await ctx.api.management.POST(`/providers/${path}/{name}`, { params: { path: { name } }, body: definition });
    onSaved();
  };
  return (
    <EditorForm save={save} submit="Save" onCancel={onCancel}>
      <label for="resource-name">Name</label>
      <input
        id="resource-name"
        value={name}
        onInput={(e) => setName(e.currentTarget.value)}
        required
        readOnly={initial !== undefined}
      />
      <DefinitionFields
        ctx={ctx}
        kind={kind}
        definition={objectOf(json)}
        onChange={(d) => setJson(JSON.stringify(d, null, 2))}
      />
      <label for="resource-json">Definition (JSON)</label>
      <textarea
        id="resource-json"
        rows={14}
        spellcheck={false}
        value={json}
        onInput={(e) => setJson(e.currentTarget.value)}
      />
    </EditorForm>
  );
}
