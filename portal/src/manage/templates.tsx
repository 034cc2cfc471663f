// New agent from template: pick an agent template, fill in its parameters (each by its declared type), and
// create-agent makes the whole set; the API's message names a parameter it refuses.
import { useEffect, useState } from 'preact/hooks';
import { type Resource, text, unwrap } from '../resource';
import { type Context, ErrorText } from '../shell';
import { EditorForm } from './editor';

interface Parameter {
  name: string;
  type: string;
  description?: string;
  default_value?: unknown;
}

const TEMPLATES = '/providers/Svc.Agent/agentTemplates';

/** A field's text as the parameter's type: numbers, lines for arrays; blank leaves the default. */
function valueOf(p: Parameter, raw: string | boolean | undefined): unknown {
  if (typeof raw === 'boolean') return raw;
  if (raw === undefined || raw.trim() === '') return undefined;
  if (p.type === 'int' || p.type === 'float') return Number(raw);
  if (p.type === 'array') return raw.split('\n').map((l) => l.trim()).filter((l) => l.length > 0);
  return raw;
}

export function NewFromTemplate({ ctx, onCreated, onCancel }: { ctx: Context; onCreated: (objectIds: string[]) => void; onCancel: () => void }) {
  const [templates, setTemplates] = useState<Resource[]>([]);
  const [chosen, setChosen] = useState<string>('');
  const [parameters, setParameters] = useState<Parameter[]>([]);
  const [values, setValues] = useState<Record<string, string | boolean>>({});
  const [error, setError] = useState<unknown>();
  useEffect(() => {
    ctx.api.all<{ resource: Resource }>('management', TEMPLATES).then((l) => {
      const list = l.map(unwrap);
      setTemplates(list);
      setChosen(list[0]?.name ?? '');
    }, setError);
  }, []);
  useEffect(() => {
    if (!chosen) return;
    setValues({});
    ctx.api.json<{ resource: Resource }>('management', `${TEMPLATES}/${encodeURIComponent(chosen)}`).then((r) => setParameters((unwrap(r).parameters as Parameter[] | undefined) ?? []), setError);
  }, [chosen]);
  const save = async () => {
    const given: Record<string, unknown> = {};
    for (const p of parameters) {
      const v = valueOf(p, values[p.name]);
      if (v !== undefined) given[p.name] = v;
    }
    const created = await ctx.api.json<{ object_ids: string[] }>('management', `${TEMPLATES}/${encodeURIComponent(chosen)}/create-agent`, { method: 'POST', json: { parameters: given } });
    onCreated(created.object_ids);
  };
  const description = text(templates.find((t) => t.name === chosen)?.description);
  return (
    <EditorForm save={save} submit="Create agent" onCancel={onCancel}>
      <ErrorText error={error} />
      <label for="template">Template</label>
      <select id="template" value={chosen} onChange={(e) => setChosen(e.currentTarget.value)}>
        {templates.map((t) => (
          <option key={t.name} value={t.name}>
            {text(t.display_name) || t.name}
          </option>
        ))}
      </select>
      {description && <p class="muted">{description}</p>}
      {parameters.map((p) => {
        const id = `template-${p.name}`;
        const hint = `${p.description ?? ''}${p.default_value !== undefined ? ` (default: ${JSON.stringify(p.default_value)})` : ''}`;
        if (p.type === 'bool') {
          return (
            <label key={p.name} class="check">
              <input type="checkbox" checked={values[p.name] === true} onChange={(e) => setValues({ ...values, [p.name]: e.currentTarget.checked })} /> {p.name}
            </label>
          );
        }
        const value = typeof values[p.name] === 'string' ? (values[p.name] as string) : '';
        const set = (v: string) => setValues({ ...values, [p.name]: v });
        return (
          <div key={p.name} class="field">
            <label for={id}>{p.name}</label>
            {p.type === 'array' ? (
              <textarea id={id} rows={3} value={value} onInput={(e) => set(e.currentTarget.value)} aria-describedby={`${id}-hint`} />
            ) : (
              <input id={id} type={p.type === 'int' || p.type === 'float' ? 'number' : 'text'} step={p.type === 'float' ? 'any' : undefined} value={value} onInput={(e) => set(e.currentTarget.value)} aria-describedby={`${id}-hint`} />
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
