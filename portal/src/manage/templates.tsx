// New agent from template: pick an agent template, fill in its parameters (each by its declared type), and
// create-agent makes the whole set; the API's message names a parameter it refuses.
import { useEffect, useState } from 'preact/hooks';
import { answer } from '../api';
import { type Resource, text } from '../resource';
import type { Definition } from '../schemas';
import { type Context, ErrorText } from '../shell';
import { EditorForm } from './editor';
import { listResources, readResource } from './read-resources';

type Parameter = NonNullable<Definition<'agentTemplates-upsert'>['parameters']>[number];

const TEMPLATES = 'Svc.Agent/agentTemplates';

/**
 * A template's parameters. The document gives the template's answer as an open object; its parameters are
 * those agentTemplates-upsert takes.
 */
const parametersOf = (template: Resource) => (template.parameters as Parameter[] | undefined) ?? [];

/** A field's text as the parameter's type: numbers, lines for arrays; blank leaves the default. */
function valueOf(p: Parameter, raw: string | boolean | undefined): unknown {
  if (typeof raw === 'boolean') return raw;
  if (raw === undefined || raw.trim() === '') return undefined;
  if (p.type === 'int' || p.type === 'float') return Number(raw);
  if (p.type === 'array')
    return raw
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l.length > 0);
  return raw;
}

export function NewFromTemplate({
  ctx,
  onCreated,
  onCancel,
}: {
  ctx: Context;
  onCreated: (objectIds: string[]) => void;
  onCancel: () => void;
}) {
  const [templates, setTemplates] = useState<Resource[]>([]);
  const [chosen, setChosen] = useState<string>('');
  const [parameters, setParameters] = useState<Parameter[]>([]);
  const [values, setValues] = useState<Record<string, string | boolean>>({});
  const [error, setError] = useState<unknown>();
  useEffect(() => {
    listResources(ctx.api, TEMPLATES).then((list) => {
      setTemplates(list);
      setChosen(list[0]?.name ?? '');
    }, setError);
  }, []);
  useEffect(() => {
    if (!chosen) return;
    // A template chosen since this one was asked for keeps its own parameters.
    let current = true;
    readResource(ctx.api, TEMPLATES, chosen).then((t) => current && setParameters(parametersOf(t)), setError);
    return () => {
      current = false;
    };
  }, [chosen]);
  // The values are cleared as the template changes, not after it renders: what is typed next is kept.
  const choose = (name: string) => {
    setChosen(name);
    setValues({});
  };
  const save = async () => {
    const given: Record<string, unknown> = {};
    for (const p of parameters) {
      const v = valueOf(p, values[p.name]);
      if (v !== undefined) given[p.name] = v;
    }
    const created = await answer(
      ctx.api.management.POST('/providers/Svc.Agent/agentTemplates/{name}/create-agent', {
        params: { path: { name: chosen } },
        body: { parameters: given },
      }),
    );
    onCreated(created.object_ids);
  };
  const description = text(templates.find((t) => t.name === chosen)?.description);
  return (
    <EditorForm save={save} submit="Create agent" onCancel={onCancel}>
      <ErrorText error={error} />
      <label for="template">Template</label>
      <select id="template" value={chosen} onChange={(e) => choose(e.currentTarget.value)}>
        {templates.map((t) => (
          <option key={t.name} value={t.name}>
            {text(t.display_name) || t.name}
          </option>
        ))}
      </select>
      {description && <p class="muted">{description}</p>}
      {parameters.map((p) => {
        const id = `template-${p.name}`;
        const fallback = p.default_value !== undefined ? ` (default: ${JSON.stringify(p.default_value)})` : '';
        const hint = `${p.description ?? ''}${fallback}`;
        if (p.type === 'bool') {
          return (
            <label key={p.name} class="check">
              <input
                type="checkbox"
                checked={values[p.name] === true}
                onChange={(e) => setValues({ ...values, [p.name]: e.currentTarget.checked })}
              />{' '}
              {p.name}
            </label>
          );
        }
        const given = values[p.name];
        const value = typeof given === 'string' ? given : '';
        const set = (v: string) => setValues({ ...values, [p.name]: v });
        return (
          <div key={p.name} class="field">
            <label for={id}>{p.name}</label>
            {p.type === 'array' ? (
              <textarea
                id={id}
                rows={3}
                value={value}
                onInput={(e) => set(e.currentTarget.value)}
                aria-describedby={`${id}-hint`}
              />
            ) : (
              <input
                id={id}
                type={p.type === 'int' || p.type === 'float' ? 'number' : 'text'}
                step={p.type === 'float' ? 'any' : undefined}
                value={value}
                onInput={(e) => set(e.currentTarget.value)}
                aria-describedby={`${id}-hint`}
              />
            )}
            <small id={`${id}-hint`} class="muted">
              {p.type}
              {p.type === 'array' ? ', one per line' : ''}: {hint}
            </small>
          </div>
        );
      })}
    </EditorForm>
  );
}
