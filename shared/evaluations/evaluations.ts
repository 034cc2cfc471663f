// Evaluations of an agent: cases (a prompt and what its answer must show), run on the queue against the agent
// as it is, each run recorded with the agent version it ran on, per-case verdicts and reasons, pass rate,
// cost and latency. Evaluations, their runs and the prompts raters shared live beside the resources, under
// the agent (Svc.Agent/agents/{agent}/evaluations/{name}); they are an owner's tool: reading and writing
// them needs write access to the agent.
import { createHash, randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { Principal } from '../auth/principal.js';
import { reserve, releasing } from '../completions/admission.js';
import { runCompletion } from '../completions/completion.js';
import { DomainError, notFound, validationError } from '../errors.js';
import { completionModel } from '../models/model-endpoint.js';
import { UpstreamError } from '../models/upstream-errors.js';
import { definition, objectIdOf, partitionOf, resourceId } from '../providers/types/resource-type.js';
import { aiModels } from '../providers/types/catalog.js';
import { versionOf } from '../providers/versions.js';
import { agents, type AgentDoc } from '../providers/types/agent.js';
import type { QueueDelivery } from '../queues/producer.js';
import type { Container, Doc, DocumentStore } from '../store/types.js';
import { updateDocument } from '../store/update.js';
import { compileChecks, Expect, type CompiledChecks } from '../matching/checks.js';
import { judge } from './judge.js';
import { MatchTimeout, offThread } from '../matching/matcher.js';
import type { Authorizer } from '../auth/authorizer.js';
import type { PrincipalDirectory } from '../auth/directory.js';
import type { Budgets } from '../completions/budgets.js';
import type { Quotas } from '../completions/quotas.js';
import type { Config } from '../config.js';
import type { Conversations } from '../conversations/conversations.js';
import type { SessionTurns } from '../conversations/turns.js';
import type { Files } from '../files/files.js';
import type { ExtractionPool } from '../knowledge/extract-pool.js';
import type { VectorIndex } from '../knowledge/vector-index.js';
import type { Log } from '../log.js';
import type { Memories } from '../memory/memory.js';
import type { ModelCredentials } from '../models/credentials.js';
import type { ModelGateway } from '../models/gateway.js';
import type { Dispatcher } from '../net/undici.js';
import type { PluginRuntime } from '../plugins/runtime.js';
import type { ResourceCache } from '../providers/resource-cache.js';
import type { AppSettings } from '../providers/settings.js';
import type { Producer } from '../queues/producer.js';
import { narrowed } from '../store/narrowed.js';

/** What this module uses of the service (the hosts pass the whole of it). */
export interface EvaluationsDeps {
  readonly authorizer: Authorizer;
  readonly budgets: Budgets;
  readonly config: Config;
  readonly conversations: Conversations;
  readonly credentials: ModelCredentials;
  readonly directory: PrincipalDirectory;
  readonly extraction: ExtractionPool;
  readonly files: Files;
  readonly log: Log;
  readonly memories: Memories;
  readonly models: ModelGateway;
  readonly plugins: PluginRuntime;
  readonly producer: Producer;
  readonly quotas: Quotas;
  readonly resourceCache: ResourceCache;
  readonly settings: AppSettings;
  readonly store: DocumentStore;
  readonly turns: SessionTurns;
  readonly userDispatcher: Dispatcher;
  readonly vectors: VectorIndex;
}

const EVALUATIONS_PK = 'Svc.Agent/evaluations';
const RUNS_PK = 'Svc.Agent/evaluationRuns';
const CANDIDATES_PK = 'Svc.Agent/evaluationCandidates';
/** Cases of one run answered at once. */
const CONCURRENCY = 8;
/** What a run keeps of each answer. */
const ANSWER_CHARS = 2000;

export const Case = z.object({ user_prompt: z.string().min(1).max(8000), expect: Expect }).strict();

export const EvaluationBody = definition('evaluation', () => ({
  judge_ai_model_object_id: z
    .string()
    .optional()
    .describe('The completion model that grades the cases with a judge rubric'),
  cases: z.array(Case).min(1).max(200),
})).superRefine((d, ctx) => {
  for (const [i, c] of d.cases.entries()) {
    if (
      c.expect.judge !== undefined &&
      (c.expect.judge_ai_model_object_id ?? d.judge_ai_model_object_id) === undefined
    ) {
      ctx.addIssue({
        code: 'custom',
        path: ['judge_ai_model_object_id'],
        message: `required when a case has a judge rubric (cases[${i}])`,
      });
    }
  }
});
export type EvaluationBody = z.output<typeof EvaluationBody>;

export interface EvaluationDoc
  extends
    Doc,
    Omit<
      EvaluationBody,
      'type' | 'object_id' | 'created_on' | 'created_by' | 'updated_on' | 'updated_by' | 'deleted' | 'version'
    > {
  type: 'evaluation';
  agent_id: string;
  agent_name: string;
  object_id: string;
  created_on: string;
  created_by: string;
  updated_on: string;
  updated_by: string;
}

export interface CaseResult {
  user_prompt: string;
  passed: boolean;
  reason: string;
  answer: string;
  latency_ms: number;
  total_tokens: number;
  cost: number;
}

export type RunStatus = 'Pending' | 'InProgress' | 'Completed' | 'Failed';

export interface EvaluationRunDoc extends Doc {
  type: 'evaluation-run';
  name: string;
  object_id: string;
  evaluation_object_id: string;
  evaluation_id: string;
  agent_name: string;
  evaluation_name: string;
  status: RunStatus;
  /** The version of the agent the cases ran against. */
  agent_version: number | null;
  case_count: number;
  results: CaseResult[];
  pass_rate: number | null;
  total_cost: number;
  total_tokens: number;
  duration_ms: number | null;
  error?: string;
  created_on: string;
  created_by: string;
  started_on: string | null;
  completed_on: string | null;
  /** The starter: the cases run as this principal. */
  principal: Principal;
}

/** A prompt a rater shared with the agent's owner with a thumbs-down: the prompt only, never who rated. */
export interface CandidateDoc extends Doc {
  type: 'evaluation-candidate';
  agent_id: string;
  agent_name: string;
  user_prompt: string;
  comments: string | null;
  rated_on: string;
}

declare module '../store/types.js' {
  interface StoredDocs {
    'resources/evaluation': EvaluationDoc;
    'resources/evaluation-run': EvaluationRunDoc;
    'resources/evaluation-candidate': CandidateDoc;
  }
}

export const RunMessage = z.object({ evaluation_run: z.string().min(1) });
export type RunMessage = z.output<typeof RunMessage>;

const evaluationId = (agent: string, name: string) => `${resourceId(agent)}~${resourceId(name)}`;
const ended = (r: EvaluationRunDoc) => r.status === 'Completed' || r.status === 'Failed';

/** A stored document as the API shows it: without store bookkeeping (and a run without its principal). */
export function present<T extends Doc>(doc: T): Omit<T, 'id' | 'pk' | 'principal' | 'agent_id' | 'evaluation_id'> {
  const shown = { ...doc } as Record<string, unknown>;
  for (const k of ['id', 'pk', '_etag', 'ttl', 'principal', 'agent_id', 'evaluation_id'])
    Reflect.deleteProperty(shown, k);
  return shown as Omit<T, 'id' | 'pk' | 'principal' | 'agent_id' | 'evaluation_id'>;
}

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
    agentName: string,
    body: EvaluationBody,
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
    await updateDocument(this.evaluations, EVALUATIONS_PK, evaluationId(agent.name, body.name), (existing) => {
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
    });
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
    agentName: string,
    name: string,
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
    return updateDocument(this.runs, RUNS_PK, id, (current) => {
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
        const c = evaluation.cases[i];
        const compiled = checks[i];
        if (c && compiled)
          results[i] = await this.runCase(s, run, evaluation, agent.name, c, compiled, i, delivery.signal);
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

  /** One case: the agent's answer, its rule checks, then the judge. A failing completion fails the case. */
  private async runCase(
    s: EvaluationsDeps,
    run: EvaluationRunDoc,
    evaluation: EvaluationDoc,
    agentName: string,
    c: z.output<typeof Case>,
    checks: CompiledChecks,
    i: number,
    signal?: AbortSignal,
  ): Promise<CaseResult> {
    const started = performance.now();
    const result = (passed: boolean, reason: string, answer = '', tokens = 0, cost = 0): CaseResult => ({
      user_prompt: c.user_prompt,
      passed,
      reason,
      answer: answer.slice(0, ANSWER_CHARS),
      latency_ms: Math.round(performance.now() - started),
      total_tokens: tokens,
      cost,
    });
    let answer;
    try {
      // Each case is a completion of the starter's: admitted against their budgets and quotas like any other.
      const { request, reservation } = await reserve(s, run.principal, {
        agent_name: agentName,
        user_prompt: c.user_prompt,
      });
      answer = await releasing(
        s,
        reservation,
        runCompletion(s, run.principal, request, {
          operationId: `eval-${run.name}-${i}`,
          mayRepeat: false,
          ...(signal ? { signal } : {}),
        }),
      );
    } catch (e) {
      if (e instanceof DomainError || e instanceof UpstreamError)
        return result(false, `The completion failed: ${e.message}`);
      throw e;
    }
    const text = answer.completion;
    // A long answer is checked off the request thread, within a time bound (a case that reaches it fails).
    const broken =
      text.length <= INLINE_ANSWER_CHARS
        ? checks.failure(text)
        : await offThread.run({ kind: 'checks', expect: c.expect, text }).catch(checksTimedOut);
    if (broken) return result(false, broken, text, answer.total_tokens, answer.total_cost);
    const judgeModel = c.expect.judge_ai_model_object_id ?? evaluation.judge_ai_model_object_id;
    if (c.expect.judge === undefined || judgeModel === undefined)
      return result(true, 'Every check passed', text, answer.total_tokens, answer.total_cost);
    try {
      const verdict = await judge(s, {
        payer: { principal: run.principal, agent: { name: agentName } },
        modelId: judgeModel,
        rubric: c.expect.judge,
        prompt: c.user_prompt,
        answer: text,
        signal,
      });
      return result(
        verdict.passed,
        verdict.reason,
        text,
        answer.total_tokens + verdict.tokens,
        answer.total_cost + verdict.cost,
      );
    } catch (e) {
      if (e instanceof UpstreamError)
        return result(false, `The judge failed: ${e.message}`, text, answer.total_tokens, answer.total_cost);
      throw e;
    }
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
    shared: boolean,
    comments: string | null,
    prompt: () => Promise<string | undefined>,
  ): Promise<void> {
    const id = `${resourceId(answer.agent_name)}~${createHash('sha256').update(`${owner.toLowerCase()}\n${answer.id}`).digest('hex').slice(0, 32)}`;
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

/** A candidate as the owner sees it: its own id, the prompt, the rater's comments and when. */
export const presentCandidate = (c: CandidateDoc) => ({
  id: c.id.split('~')[1] ?? c.id,
  agent_name: c.agent_name,
  user_prompt: c.user_prompt,
  comments: c.comments,
  rated_on: c.rated_on,
});

/** A case whose checks could not run in time fails, saying so. */
const checksTimedOut = (e: unknown) => {
  if (e instanceof MatchTimeout) return `the checks could not run: ${e.message}`;
  throw e;
};

/** Answers longer than this are checked in the matcher's worker. */
const INLINE_ANSWER_CHARS = 8_000;

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
