// What evaluations keep: an evaluation's definition (its cases and judge) as the API takes it, the
// documents of evaluations, their runs and the prompts raters shared (all in the resources container, under
// the agent), the queue message of a run, and how each is shown.
import { z } from 'zod';
import type { Principal } from '../auth/principal.js';
import { Expect } from '../matching/checks.js';
import { definition } from '../providers/types/resource-type.js';
import type { Doc } from '../store/types.js';

/** One case: a prompt, and what the agent's answer to it must show. */
export const Case = z.object({ user_prompt: z.string().min(1).max(8000), expect: Expect }).strict();

/** An evaluation as the API takes it: its cases, and the judge model of those with a rubric. */
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

/** A stored evaluation of an agent. */
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

/** One case's verdict in a run, with its reason, the answer (cut), latency, tokens and cost. */
export interface CaseResult {
  user_prompt: string;
  passed: boolean;
  reason: string;
  answer: string;
  latency_ms: number;
  total_tokens: number;
  cost: number;
}

/** Where a run is: queued, running, or ended. */
export type RunStatus = 'Pending' | 'InProgress' | 'Completed' | 'Failed';

/** A stored run of an evaluation. */
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

/** The queue message of a run: the run's document id. */
export const RunMessage = z.object({ evaluation_run: z.string().min(1) });
export type RunMessage = z.output<typeof RunMessage>;

/** What the API does not show of a stored document: store bookkeeping (and a run's principal). */
type Hidden = 'id' | 'pk' | 'principal' | 'agent_id' | 'evaluation_id';
const HIDDEN = ['id', 'pk', '_etag', 'ttl', 'principal', 'agent_id', 'evaluation_id'];

/** A stored document as the API shows it: without store bookkeeping (and a run without its principal). */
export function present<T extends Doc>(doc: T): Omit<T, Hidden> {
  const shown: Partial<T> = { ...doc };
  for (const k of HIDDEN) Reflect.deleteProperty(shown, k);
  // What is left is T without the hidden fields, which the type system cannot follow through a deletion.
  return shown as Omit<T, Hidden>;
}

/** A candidate as the owner sees it: its own id, the prompt, the rater's comments and when. */
export const presentCandidate = (c: CandidateDoc) => ({
  id: c.id.split('~')[1] ?? c.id,
  agent_name: c.agent_name,
  user_prompt: c.user_prompt,
  comments: c.comments,
  rated_on: c.rated_on,
});
