// Evaluations of an agent: cases (a prompt and what its answer must show), run on the queue against the agent
// as it is, each run recorded with the agent version it ran on, per-case verdicts and reasons, pass rate,
// cost and latency. Evaluations, their runs and the prompts raters shared live beside the resources, under
// the agent (Svc.Agent/agents/{agent}/evaluations/{name}); they are an owner's tool: reading and writing
// them needs write access to the agent. What they store is in documents.ts, how one case runs in run-case.ts.
import { createHash, randomUUID } from 'node:crypto';
import type { Principal } from '../auth/principal.js';
import { notFound, validationError } from '../errors.js';
import { compileChecks } from '../matching/checks.js';
import { completionModel } from '../models/model-endpoint.js';
import { agents, type AgentDoc } from '../providers/types/agent.js';
import { aiModels } from '../providers/types/catalog.js';
import { objectIdOf, partitionOf, resourceId } from '../providers/types/resource-type.js';
import { versionOf } from '../providers/versions.js';
import type { Producer, QueueDelivery } from '../queues/producer.js';
import type { Container, DocumentStore } from '../store/types.js';
import { narrowed } from '../store/narrowed.js';
import { updateDocument } from '../store/update.js';
import type {
  CandidateDoc,
  CaseResult,
  EvaluationBody,
  EvaluationDoc,
  EvaluationRunDoc,
  RunMessage,
} from './documents.js';
import { runCase, type CaseRunDeps } from './run-case.js';

/** A rater's consent to share a rated answer's prompt with the agent's owner. */
export interface RaterConsent {
  /** A thumbs-down shared with the owner; false withdraws any consent given before. */
  shared: boolean;
  comments: string | null;
  /** The prompt of the rated answer's turn, read only when it is shared. */
  prompt: () => Promise<string | undefined>;
}

/** What this module uses of the service (the hosts pass the whole of it). */
export interface EvaluationsDeps extends CaseRunDeps {
  readonly producer: Producer;
}

const EVALUATIONS_PK = 'Svc.Agent/evaluations';
const RUNS_PK = 'Svc.Agent/evaluationRuns';
const CANDIDATES_PK = 'Svc.Agent/evaluationCandidates';
/** Cases of one run answered at once. */
const CONCURRENCY = 8;

const evaluationId = (agent: string, name: string) => `${resourceId(agent)}~${resourceId(name)}`;
const ended = (r: EvaluationRunDoc) => r.status === 'Completed' || r.status === 'Failed';

export class Evaluations {
  private readonly evaluations: Container<EvaluationDoc>;
  private readonly runs: Container<EvaluationRunDoc>;
  private readonly candidates: Container<CandidateDoc>;

  /** All three kinds of document live in the resources container, each in a partition of its own. */
  constructor(store: Pick<DocumentStore, 'container'>) {
    const resources = store.container('resources');
    this.evaluations = narrowed(resources, (doc): doc is EvaluationDoc => 'type' in doc && doc.type === 'evaluation');
    this.runs = narrowed(resources, (doc): doc is EvaluationRunDoc => 'type' in doc && doc.type === 'evaluation-run');
    this.candidates = narrowed(
      resources,
      (doc): doc is CandidateDoc => 'type' in doc && doc.type === 'evaluation-candidate',
    );
  }

  private async agent(s: EvaluationsDeps, agentName: string): Promise<AgentDoc> {
    const agent = await s.resourceCache.get(objectIdOf(s.config.instanceId, agents, agentName), agents);
    if (!agent) throw notFound(`Agent ${agentName} not found`);
    return agent;
  }

  objectId(s: EvaluationsDeps, agentName: string, name: string): string {
    return `${objectIdOf(s.config.instanceId, agents, agentName)}/evaluations/${name}`;
  }

  /** Creates or replaces an evaluation; every expression, schema and the judge model checked first. */
  async save(
    s: EvaluationsDeps,
    principal: Principal,
    { agentName, body }: { agentName: string; body: EvaluationBody },
  ): Promise<{ object_id: string }> {
    const agent = await this.agent(s, agentName);
    for (const [i, c] of body.cases.entries()) {
      try {
        compileChecks(c.expect);
      } catch (e) {
        throw validationError([{ field: `cases[${i}].expect`, message: e instanceof Error ? e.message : String(e) }]);
      }
    }
    for (const judgeModel of judgesOf(body)) {
      const model = await completionModel(s, judgeModel);
      if (typeof model === 'string') throw validationError([{ field: 'judge_ai_model_object_id', message: model }]);
      await requireJudge(s, principal, judgeModel);
    }
    const objectId = this.objectId(s, agent.name, body.name);
    const {
      type: _t,
      object_id: _o,
      created_on: _c,
      created_by: _cb,
      updated_on: _u,
      updated_by: _ub,
      deleted: _d,
      version: _v,
      ...definition
    } = body;
    await updateDocument(
      this.evaluations,
      { pk: EVALUATIONS_PK, id: evaluationId(agent.name, body.name) },
      (existing) => {
        const now = new Date().toISOString();
        return {
          ...definition,
          id: evaluationId(agent.name, body.name),
          pk: EVALUATIONS_PK,
          type: 'evaluation' as const,
          agent_id: resourceId(agent.name),
          agent_name: agent.name,
          object_id: objectId,
          created_on: existing?.created_on ?? now,
          created_by: existing?.created_by ?? principal.upn,
          updated_on: now,
          updated_by: principal.upn,
        };
      },
    );
    return { object_id: objectId };
  }

  async get(agentName: string, name: string): Promise<EvaluationDoc> {
    const doc = await this.evaluations.read(EVALUATIONS_PK, evaluationId(agentName, name));
    if (!doc) throw notFound(`Evaluation ${name} of agent ${agentName} not found`);
    return doc;
  }

  async list(agentName: string): Promise<EvaluationDoc[]> {
    return (
      await this.evaluations.query({
        partition: EVALUATIONS_PK,
        where: [{ field: 'agent_id', op: 'eq', value: resourceId(agentName) }],
        orderBy: [{ field: 'name' }],
      })
    ).items;
  }

  /** Removes an evaluation with its runs. */
  async delete(agentName: string, name: string): Promise<{ object_id: string; deleted: boolean }> {
    const doc = await this.get(agentName, name);
    for (const run of await this.listRuns(agentName, name)) await this.runs.delete(RUNS_PK, run.id);
    await this.evaluations.delete(EVALUATIONS_PK, doc.id);
    return { object_id: doc.object_id, deleted: true };
  }

  /** Records a Pending run and queues it; answers the run's object id. */
  async start(
    s: EvaluationsDeps,
    principal: Principal,
    { agentName, name }: { agentName: string; name: string },
  ): Promise<{ object_id: string }> {
    const evaluation = await this.get(agentName, name);
    // The judge runs for the starter: they must be able to read its model, whoever saved the evaluation.
    for (const judgeModel of judgesOf(evaluation)) await requireJudge(s, principal, judgeModel);
    const runId = randomUUID();
    const now = new Date().toISOString();
    const run: EvaluationRunDoc = {
      id: `${evaluation.id}~${runId}`,
      pk: RUNS_PK,
      type: 'evaluation-run',
      name: runId,
      object_id: `${evaluation.object_id}/runs/${runId}`,
      evaluation_object_id: evaluation.object_id,
      evaluation_id: evaluation.id,
      agent_name: evaluation.agent_name,
      evaluation_name: evaluation.name,
      status: 'Pending',
      agent_version: null,
      case_count: evaluation.cases.length,
      results: [],
      pass_rate: null,
      total_cost: 0,
      total_tokens: 0,
      duration_ms: null,
      created_on: now,
      created_by: principal.upn,
      started_on: null,
      completed_on: null,
      principal,
    };
    await this.runs.create(run);
    await s.producer.send(s.config.evaluationsQueue, { evaluation_run: run.id } satisfies RunMessage);
    return { object_id: run.object_id };
  }

  async listRuns(agentName: string, name: string): Promise<EvaluationRunDoc[]> {
    const { items } = await this.runs.query({
      partition: RUNS_PK,
      where: [{ field: 'evaluation_id', op: 'eq', value: evaluationId(agentName, name) }],
      orderBy: [{ field: 'created_on', direction: 'desc' }],
    });
    return items;
  }

  async getRun(agentName: string, name: string, runId: string): Promise<EvaluationRunDoc> {
    const run = await this.runs.read(RUNS_PK, `${evaluationId(agentName, name)}~${runId.toLowerCase()}`);
    if (!run) throw notFound(`Run ${runId} of evaluation ${name} not found`);
    return run;
  }

  private update(id: string, change: (run: EvaluationRunDoc) => Partial<EvaluationRunDoc> | undefined) {
    return updateDocument(this.runs, { pk: RUNS_PK, id }, (current) => {
      const patch = current && change(current);
      return current && patch ? { ...current, ...patch } : undefined;
    });
  }

  /** The queue worker: runs every case, then records the verdicts. Throws to have the message delivered again. */
  async execute(s: EvaluationsDeps, id: string, delivery: QueueDelivery): Promise<void> {
    const run = await this.update(id, (r) =>
      ended(r) ? undefined : { status: 'InProgress', started_on: r.started_on ?? new Date().toISOString() },
    );
    if (!run || ended(run)) return;
    const evaluation = await this.evaluations.read(EVALUATIONS_PK, run.evaluation_id);
    const agent = await s.resourceCache.get(objectIdOf(s.config.instanceId, agents, run.agent_name), agents);
    if (!evaluation || !agent) {
      await this.fail(id, evaluation ? `Agent ${run.agent_name} no longer exists` : 'The evaluation was deleted');
      return;
    }
    const started = performance.now();
    // Each case's expressions and schemas are compiled once for the run (they were checked on save).
    const checks = evaluation.cases.map((c) => compileChecks(c.expect));
    const results: CaseResult[] = new Array<CaseResult>(evaluation.cases.length);
    let next = 0;
    const worker = async () => {
      while (next < evaluation.cases.length) {
        const i = next++;
        const testCase = evaluation.cases[i];
        const compiled = checks[i];
        if (testCase && compiled) {
          const { signal } = delivery;
          results[i] = await runCase(s, {
            run,
            evaluation,
            agentName: agent.name,
            testCase,
            checks: compiled,
            index: i,
            signal,
          });
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, evaluation.cases.length) }, worker));
    const passed = results.filter((r) => r.passed).length;
    await this.update(id, () => ({
      status: 'Completed',
      agent_version: versionOf(agent),
      results,
      pass_rate: results.length > 0 ? passed / results.length : 0,
      total_cost: results.reduce((sum, r) => sum + r.cost, 0),
      total_tokens: results.reduce((sum, r) => sum + r.total_tokens, 0),
      duration_ms: Math.round(performance.now() - started),
      completed_on: new Date().toISOString(),
    }));
  }

  /** Marks a run Failed (a message given up on, or a run with nothing left to run). */
  async fail(id: string, reason: string): Promise<void> {
    await this.update(id, (r) =>
      ended(r) ? undefined : { status: 'Failed', error: reason, completed_on: new Date().toISOString() },
    );
  }

  /**
   * Records or withdraws a rater's consent: a thumbs-down shared with the owner keeps the turn's prompt (and
   * the rater's comments) as a candidate case; any other rating of the message removes it.
   */
  async recordRating(
    owner: string,
    answer: { id: string; agent_name: string; session_id: string; operation_id: string },
    { shared, comments, prompt }: RaterConsent,
  ): Promise<void> {
    const hash = createHash('sha256').update(`${owner.toLowerCase()}\n${answer.id}`).digest('hex');
    const id = `${resourceId(answer.agent_name)}~${hash.slice(0, 32)}`;
    if (!shared) {
      await this.candidates.delete(CANDIDATES_PK, id);
      return;
    }
    const text = await prompt();
    if (text === undefined) return;
    await this.candidates.upsert({
      id,
      pk: CANDIDATES_PK,
      type: 'evaluation-candidate',
      agent_id: resourceId(answer.agent_name),
      agent_name: answer.agent_name,
      user_prompt: text,
      comments,
      rated_on: new Date().toISOString(),
    });
  }

  async listCandidates(agentName: string): Promise<CandidateDoc[]> {
    return (
      await this.candidates.query({
        partition: CANDIDATES_PK,
        where: [{ field: 'agent_id', op: 'eq', value: resourceId(agentName) }],
        orderBy: [{ field: 'rated_on', direction: 'desc' }],
      })
    ).items;
  }

  /** Dismisses a candidate (the owner made it a case, or does not want it). */
  async deleteCandidate(agentName: string, candidateId: string): Promise<void> {
    const id = `${resourceId(agentName)}~${candidateId.toLowerCase()}`;
    if (!(await this.candidates.delete(CANDIDATES_PK, id))) throw notFound(`Candidate ${candidateId} not found`);
  }
}

/** The judge models an evaluation names. */
const judgesOf = (e: Pick<EvaluationBody, 'judge_ai_model_object_id' | 'cases'>) =>
  new Set(
    [e.judge_ai_model_object_id, ...e.cases.map((c) => c.expect.judge_ai_model_object_id)].filter(
      (m) => m !== undefined,
    ),
  );

/** A judge model is used for a principal only when they may read it (403 otherwise). */
const requireJudge = (s: EvaluationsDeps, principal: Principal, modelId: string) =>
  s.authorizer.require(principal, `${partitionOf(aiModels)}/read`, modelId);
