// One section of resources: the list (with deleted ones on request), the editor, delete and purge.
import { useEffect, useState } from 'preact/hooks';
import type { Resource } from '../resource';
import { type Context, ErrorText, TableHead } from '../shell';
import { AgentProperties } from './agent-properties';
import { AgentTokens } from './agent-tokens';
import { BrandingForm, BudgetsForm, QuotasForm } from './app-config';
import { Editor } from './editor';
import { Evaluations } from './evaluations';
import { History } from './history';
import { PipelineRuns } from './pipeline-runs';
import { listResources } from './read-resources';
import { RoleAssignmentForm } from './role-assignment-form';
import { NewFromTemplate } from './templates';
import { details, TYPES } from './types';
export function Resources({ ctx, kind }: { ctx: Context; kind: keyof typeof TYPES }) {
  const t = TYPES[kind];
  const [items, setItems] = useState<Resource[]>([]);
  const [editing, setEditing] = useState<Resource | 'new' | 'template'>();
  const [selected, setSelected] = useState<string>();
  const [history, setHistory] = useState<string>();
  const [created, setCreated] = useState<string[]>([]);
  const [runs, setRuns] = useState(0);
  const [showDeleted, setShowDeleted] = useState(false);
  const [error, setError] = useState<unknown>();
  const runPipeline = (r: Resource) =>
    ctx.api.management
      .POST('/providers/Svc.DataPipeline/dataPipelines/{name}/process', { params: { path: { name: r.name } } })
      .then(() => setRuns((n) => n + 1), setError);
  // Deleted resources are listed only when asked for: they can then be purged (and their names used again).
  const load = (deleted = showDeleted) =>
    listResources(ctx.api, t.path, deleted).then((l) => setItems(l.filter((r) => deleted || !r.deleted)), setError);
  useEffect(() => {
    setEditing(undefined);
    setSelected(undefined);
    setHistory(undefined);
    setCreated([]);
    void load();
  }, [kind]);
  /** Makes the call once the question is confirmed, then lists the resources again. */
  const confirmed = (question: string, call: () => Promise<unknown>) => {
    if (confirm(question)) call().then(() => load(), setError);
  };
  const named = (r: Resource) => ({ params: { path: { name: r.name } } });
  const remove = (r: Resource) =>
    confirmed(`Delete ${r.name}? It can be purged afterwards.`, () =>
      ctx.api.management.DELETE(`/providers/${t.path}/{name}`, named(r)),
    );
  const purge = (r: Resource) =>
    confirmed(`Purge ${r.name} permanently? This cannot be undone.`, () =>
      ctx.api.management.POST(`/providers/${t.path}/{name}/purge`, named(r)),
    );
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
      ) : editing === 'template' ? (
        <NewFromTemplate
          ctx={ctx}
          onCancel={() => setEditing(undefined)}
          onCreated={(ids) => {
            setEditing(undefined);
            setCreated(ids);
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
            {kind === 'agents' && <button onClick={() => setEditing('template')}>New agent from template</button>}
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
          {created.length > 0 && (
            <p role="status">
              Created {created.length} resources: {created.map((id) => id.split('/providers/')[1]).join(', ')}
            </p>
          )}
          <table>
            <TableHead columns={['Name', 'Details']} actions />
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
                        <button class="link" aria-label={`History of ${r.name}`} onClick={() => setHistory(r.name)}>
                          History
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
          <Evaluations ctx={ctx} agent={selected} />
        </div>
      )}
      {history && !editing && <History ctx={ctx} path={t.path} name={history} onRestored={() => void load()} />}
      {kind === 'pipelines' && <PipelineRuns ctx={ctx} refresh={runs} />}
      {kind === 'appConfig' && !editing && (
        <>
          <BrandingForm ctx={ctx} onSaved={() => void load()} />
          <QuotasForm ctx={ctx} onSaved={() => void load()} />
          <BudgetsForm ctx={ctx} onSaved={() => void load()} />
        </>
      )}
    </section>
  );
}
