// An agent's evaluations: define one (its JSON), run it, follow its runs, and put two runs side by side, case
// by case, with the agent version each ran on. Prompts raters shared with a thumbs-down can be made cases.
import { useEffect, useState } from 'preact/hooks';
import { answer } from '../api';
import type { components } from '../api-types/management';
import type { Definition, EvaluationCandidate, EvaluationRun } from '../schemas';
import { type Context, ErrorText, TableHead, submitTo } from '../shell';
import { EditorForm, objectOf } from './editor';

const EVALUATIONS = '/providers/Svc.Agent/agents/{agentName}/evaluations';

/**
 * An evaluation as the list gives it. The document gives it as an open object (Evaluation); it is the
 * definition evaluations-upsert takes, with the agent's name the service adds (and upsert does not take).
 */
type Evaluation = Definition<'evaluations-upsert'> & { agent_name?: string };
const evaluationOf = (e: components['schemas']['Evaluation']) => e as Evaluation;

/** What the runs table shows of a run (a run just started is shown before the service lists it). */
type Run = Pick<
  EvaluationRun,
  'name' | 'status' | 'agent_version' | 'pass_rate' | 'total_cost' | 'duration_ms' | 'created_on' | 'results'
>;
type CaseResult = Run['results'][number];

const FINISHED = new Set(['Completed', 'Failed']);
const EXAMPLE = { name: 'smoke', cases: [{ user_prompt: 'Hello', expect: { contains: 'hello' } }] };
const percent = (r: Run) => (r.pass_rate === null ? '…' : `${Math.round(r.pass_rate * 100)}%`);
const verdict = (c: CaseResult | undefined) =>
  c ? `${c.passed ? 'Passed' : 'Failed'}: ${c.reason} (${c.latency_ms} ms)` : '';

export function Evaluations({ ctx, agent }: { ctx: Context; agent: string }) {
  const [evaluations, setEvaluations] = useState<Evaluation[]>([]);
  const [selected, setSelected] = useState<string>();
  const [editing, setEditing] = useState<string>();
  const [runs, setRuns] = useState<Run[]>([]);
  const [compared, setCompared] = useState<string[]>([]);
  const [candidates, setCandidates] = useState<EvaluationCandidate[]>([]);
  const [error, setError] = useState<unknown>();
  const load = () => {
    const path = { agentName: agent };
    answer(ctx.api.management.GET(EVALUATIONS, { params: { path } })).then((l) => {
      const list = l.map(evaluationOf);
      setEvaluations(list);
      setSelected((s) => s ?? list[0]?.name);
    }, setError);
    answer(
      ctx.api.management.GET('/providers/Svc.Agent/agents/{agentName}/evaluation-candidates', { params: { path } }),
    ).then(setCandidates, setError);
  };
  useEffect(load, [agent]);
  // The selected evaluation's runs, read again every second while one is not finished.
  useEffect(() => {
    if (!selected) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let live = true;
    const read = () =>
      answer(
        ctx.api.management.GET(`${EVALUATIONS}/{name}/runs`, {
          params: { path: { agentName: agent, name: selected } },
        }),
      ).then((l) => {
        if (!live) return;
        setRuns(l);
        if (l.some((r) => !FINISHED.has(r.status))) timer = setTimeout(() => void read(), 1000);
      }, setError);
    void read();
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [selected, runs.length]);
  const start = (name: string) =>
    ctx.api.management.POST(`${EVALUATIONS}/{name}/run`, { params: { path: { agentName: agent, name } } }).then(() => {
      setSelected(name);
      setRuns((l) => [
        {
          name: 'pending',
          status: 'Pending',
          agent_version: null,
          pass_rate: null,
          total_cost: 0,
          duration_ms: null,
          created_on: new Date().toISOString(),
          results: [],
        },
        ...l,
      ]);
    }, setError);
  const toggle = (name: string) =>
    setCompared((c) => (c.includes(name) ? c.filter((n) => n !== name) : [...c.slice(-1), name]));
  const pair = compared.map((n) => runs.find((r) => r.name === n)).filter((r) => r !== undefined);
  return (
    <section class="evaluations" aria-label={`Evaluations of ${agent}`}>
      <h3>Evaluations</h3>
      <ErrorText error={error} />
      {editing !== undefined ? (
        <EvaluationEditor ctx={ctx} agent={agent} initial={editing} onDone={() => (setEditing(undefined), load())} />
      ) : (
        <button onClick={() => setEditing(JSON.stringify(EXAMPLE, null, 2))}>New evaluation</button>
      )}
      <table>
        <TableHead columns={['Evaluation', 'Cases']} actions />
        <tbody>
          {evaluations.map((e) => (
            <tr key={e.name} aria-current={e.name === selected ? 'true' : undefined}>
              <td>
                <button class="link" onClick={() => setSelected(e.name)}>
                  {e.name}
                </button>
              </td>
              <td>{e.cases.length}</td>
              <td>
                <button class="link" aria-label={`Run ${e.name}`} onClick={() => void start(e.name)}>
                  Run
                </button>
                <button
                  class="link"
                  aria-label={`Edit ${e.name}`}
                  onClick={() =>
                    setEditing(
                      JSON.stringify(
                        {
                          name: e.name,
                          ...(e.judge_ai_model_object_id
                            ? { judge_ai_model_object_id: e.judge_ai_model_object_id }
                            : {}),
                          cases: e.cases,
                        },
                        null,
                        2,
                      ),
                    )
                  }
                >
                  Edit
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {selected && (
        <table aria-label={`Runs of ${selected}`}>
          <thead>
            <tr>
              <th>Compare</th>
              <th>Started</th>
              <th>Status</th>
              <th>Agent version</th>
              <th>Pass rate</th>
              <th>Cost</th>
              <th>Duration</th>
            </tr>
          </thead>
          <tbody>
            {runs.map((r) => (
              <tr key={r.name}>
                <td>
                  <input
                    type="checkbox"
                    aria-label={`Compare the run of ${new Date(r.created_on).toLocaleString()}`}
                    disabled={!FINISHED.has(r.status)}
                    checked={compared.includes(r.name)}
                    onChange={() => toggle(r.name)}
                  />
                </td>
                <td>{new Date(r.created_on).toLocaleString()}</td>
                <td>{r.status}</td>
                <td>{r.agent_version ?? '…'}</td>
                <td>{percent(r)}</td>
                <td>{r.total_cost.toFixed(4)}</td>
                <td>{r.duration_ms === null ? '…' : `${r.duration_ms} ms`}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {pair.length === 2 && <SideBySide a={pair[0] as Run} b={pair[1] as Run} />}
      {candidates.length > 0 && (
        <Candidates ctx={ctx} agent={agent} candidates={candidates} evaluations={evaluations} onChange={load} />
      )}
    </section>
  );
}

/** Two runs case by case: what each said of each prompt, with the agent version above. */
function SideBySide({ a, b }: { a: Run; b: Run }) {
  const prompts = [...new Set([...a.results, ...b.results].map((c) => c.user_prompt))];
  return (
    <table class="side-by-side" aria-label="Runs side by side">
      <thead>
        <tr>
          <th>Prompt</th>
          <th>
            Agent version {a.agent_version} ({percent(a)})
          </th>
          <th>
            Agent version {b.agent_version} ({percent(b)})
          </th>
        </tr>
      </thead>
      <tbody>
        {prompts.map((p) => {
          const [x, y] = [a.results.find((c) => c.user_prompt === p), b.results.find((c) => c.user_prompt === p)];
          return (
            <tr key={p} class={x?.passed !== y?.passed ? 'changed' : undefined}>
              <th scope="row">{p}</th>
              <td class={x?.passed ? 'passed' : 'failed'}>{verdict(x)}</td>
              <td class={y?.passed ? 'passed' : 'failed'}>{verdict(y)}</td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

/** Saves an evaluation's definition (the upsert's path names it by its name). */
const saveEvaluation = (ctx: Context, agent: string, definition: Evaluation) =>
  ctx.api.management.POST(`${EVALUATIONS}/{name}`, {
    params: { path: { agentName: agent, name: definition.name } },
    body: definition,
  });

function EvaluationEditor({
  ctx,
  agent,
  initial,
  onDone,
}: {
  ctx: Context;
  agent: string;
  initial: string;
  onDone: () => void;
}) {
  const [json, setJson] = useState(initial);
  const save = async () => {
    const body = objectOf(json);
    if (!body || typeof body.name !== 'string') throw new Error('The evaluation is not a JSON object with a name');
    // Typed in by hand: the API checks the definition against its schema, and its message is shown.
    await saveEvaluation(ctx, agent, body as Evaluation);
    onDone();
  };
  return (
    <EditorForm save={save} submit="Save evaluation" onCancel={onDone}>
      <label for="evaluation-json">
        Evaluation (JSON: name, cases with user_prompt and expect, judge_ai_model_object_id)
      </label>
      <textarea
        id="evaluation-json"
        rows={12}
        spellcheck={false}
        value={json}
        onInput={(e) => setJson(e.currentTarget.value)}
      />
    </EditorForm>
  );
}

/** Prompts raters shared: each made a case of an evaluation (with what a good answer contains), or dismissed. */
function Candidates({
  ctx,
  agent,
  candidates,
  evaluations,
  onChange,
}: {
  ctx: Context;
  agent: string;
  candidates: EvaluationCandidate[];
  evaluations: Evaluation[];
  onChange: () => void;
}) {
  return (
    <section aria-label="Shared prompts">
      <h4>Prompts raters shared with a thumbs-down</h4>
      <ul class="candidates">
        {candidates.map((c) => (
          <CandidateCase
            key={c.id}
            ctx={ctx}
            agent={agent}
            candidate={c}
            evaluations={evaluations}
            onChange={onChange}
          />
        ))}
      </ul>
    </section>
  );
}

function CandidateCase({
  ctx,
  agent,
  candidate: c,
  evaluations,
  onChange,
}: {
  ctx: Context;
  agent: string;
  candidate: EvaluationCandidate;
  evaluations: Evaluation[];
  onChange: () => void;
}) {
  // The evaluations may load after the candidates: until the owner picks one, the first listed is the target.
  const [picked, setPicked] = useState<string>();
  const target = picked ?? evaluations[0]?.name ?? '';
  const [contains, setContains] = useState('');
  const [error, setError] = useState<unknown>();
  const dismiss = () =>
    ctx.api.management.DELETE('/providers/Svc.Agent/agents/{agentName}/evaluation-candidates/{candidateId}', {
      params: { path: { agentName: agent, candidateId: c.id } },
    });
  const add = async () => {
    const evaluation = evaluations.find((e) => e.name === target);
    if (!evaluation) throw new Error('Pick an evaluation');
    const {
      object_id: _o,
      created_on: _c,
      created_by: _cb,
      updated_on: _u,
      updated_by: _ub,
      agent_name: _a,
      type: _t,
      ...definition
    } = evaluation;
    await saveEvaluation(ctx, agent, {
      ...definition,
      cases: [...evaluation.cases, { user_prompt: c.user_prompt, expect: { contains } }],
    });
    await dismiss();
    onChange();
  };
  return (
    <li>
      <blockquote>{c.user_prompt}</blockquote>
      {c.comments && <p class="muted">“{c.comments}”</p>}
      <form class="row" onSubmit={submitTo(add, setError)}>
        <label for={`evaluation-${c.id}`}>Evaluation</label>
        <select id={`evaluation-${c.id}`} value={target} onChange={(e) => setPicked(e.currentTarget.value)}>
          {evaluations.map((e) => (
            <option key={e.name}>{e.name}</option>
          ))}
        </select>
        <label for={`contains-${c.id}`}>A good answer contains</label>
        <input id={`contains-${c.id}`} value={contains} onInput={(e) => setContains(e.currentTarget.value)} required />
        <button type="submit">Add as case</button>
        <button type="button" class="link" onClick={() => void dismiss().then(onChange, setError)}>
          Dismiss
        </button>
      </form>
      <ErrorText error={error} />
    </li>
  );
}
