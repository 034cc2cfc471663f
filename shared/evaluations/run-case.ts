// One case of an evaluation run: the agent's answer to its prompt (a completion of the run's starter,
// admitted against their budgets and quotas like any other), the answer's rule checks, then the judge.
import type { CompletionDeps } from '../completions/completion-deps.js';
import { reserve, releasing } from '../completions/admission.js';
import { runCompletion } from '../completions/completion.js';
import { DomainError } from '../errors.js';
import type { CompiledChecks } from '../matching/checks.js';
import { MatchTimeout, offThread } from '../matching/matcher.js';
import { UpstreamError } from '../models/upstream-errors.js';
import type { Case, CaseResult, EvaluationDoc, EvaluationRunDoc } from './documents.js';
import { judge } from './judge.js';
import type { z } from 'zod';

/** What running a case uses of the service: everything a completion does. */
export type CaseRunDeps = CompletionDeps;

/** One case to run: the run and evaluation it belongs to, its place among the cases, its compiled checks. */
export interface CaseRun {
  run: EvaluationRunDoc;
  evaluation: EvaluationDoc;
  agentName: string;
  testCase: z.output<typeof Case>;
  checks: CompiledChecks;
  index: number;
  signal?: AbortSignal | undefined;
}

/** What a run keeps of each answer. */
const ANSWER_CHARS = 2000;
/** Answers longer than this are checked in the matcher's worker. */
const INLINE_ANSWER_CHARS = 8_000;

/** An answer, what it took, and what it cost. */
interface Answered {
  text: string;
  tokens: number;
  cost: number;
}

/** A case whose checks could not run in time fails, saying so. */
const checksTimedOut = (e: unknown) => {
  if (e instanceof MatchTimeout) return `the checks could not run: ${e.message}`;
  throw e;
};

/** One case: the agent's answer, its rule checks, then the judge. A failing completion fails the case. */
export async function runCase(
  s: CaseRunDeps,
  { run, evaluation, agentName, testCase: c, checks, index, signal }: CaseRun,
): Promise<CaseResult> {
  const started = performance.now();
  const result = (passed: boolean, reason: string, answered?: Answered): CaseResult => ({
    user_prompt: c.user_prompt,
    passed,
    reason,
    answer: (answered?.text ?? '').slice(0, ANSWER_CHARS),
    latency_ms: Math.round(performance.now() - started),
    total_tokens: answered?.tokens ?? 0,
    cost: answered?.cost ?? 0,
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
        operationId: `eval-${run.name}-${index}`,
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
  const answered = { text, tokens: answer.total_tokens, cost: answer.total_cost };
  // A long answer is checked off the request thread, within a time bound (a case that reaches it fails).
  const broken =
    text.length <= INLINE_ANSWER_CHARS
      ? checks.failure(text)
      : await offThread.run({ kind: 'checks', expect: c.expect, text }).catch(checksTimedOut);
  if (broken) return result(false, broken, answered);
  const judgeModel = c.expect.judge_ai_model_object_id ?? evaluation.judge_ai_model_object_id;
  if (c.expect.judge === undefined || judgeModel === undefined) return result(true, 'Every check passed', answered);
  try {
    const verdict = await judge(s, {
      payer: { principal: run.principal, agent: { name: agentName } },
      modelId: judgeModel,
      rubric: c.expect.judge,
      prompt: c.user_prompt,
      answer: text,
      signal,
    });
    return result(verdict.passed, verdict.reason, {
      text,
      tokens: answered.tokens + verdict.tokens,
      cost: answered.cost + verdict.cost,
    });
  } catch (e) {
    if (e instanceof UpstreamError) return result(false, `The judge failed: ${e.message}`, answered);
    throw e;
  }
}
