// The completion pipeline shared by sync, async and streamed completions: an admitted request is run as one turn
// (in its session's turns when it has a session), from its agent's chain to the recorded answer. Each stage is a
// module beside this one: admit-request, agent-chain, produce-answer (caller-text for the shields), model-answer,
// model-call, chat-messages and record-turn; turn.ts holds what they pass along.
import { randomUUID } from 'node:crypto';
import type { Principal } from '../auth/principal.js';
import type { Turn } from '../conversations/turns.js';
import { DomainError } from '../errors.js';
import { CallCancelledError } from '../models/upstream-errors.js';
import type { CompletionResponse } from './completion-request.js';
import type { Admitted } from './admit-request.js';
import { chainOf } from './agent-chain.js';
import type { CompletionDeps } from './completion-deps.js';
import { produceAnswer } from './produce-answer.js';
import {
  beforeRecording,
  recordedAnswer,
  recordFailure,
  recordTurn,
  usageWriter,
  type UsageWriter,
} from './record-turn.js';
import type { Answer, RunOptions, TurnRun } from './turn.js';

/**
 * Runs one admitted completion to the end. Idempotent on the operation id: when it may repeat, an answer
 * already recorded for the operation is reused instead of asking the model again.
 */
export async function runCompletion(
  s: CompletionDeps,
  principal: Principal,
  admitted: Admitted,
  options: RunOptions,
): Promise<CompletionResponse> {
  const chain = await chainOf(s, admitted.agent);
  if (!admitted.session) return runTurn(s, { principal, admitted, chain, options }, undefined);
  // A turn with a session is listed on it while it runs (multitask_strategy); an enqueued one reads the history after
  // the wait.
  const turn = await s.turns.begin(admitted.session, options.operationId, {
    strategy: admitted.request.multitask_strategy,
    signal: options.signal,
  });
  try {
    const signal = options.signal ? AbortSignal.any([options.signal, turn.signal]) : turn.signal;
    const run = { principal, admitted: { ...admitted, session: turn.session }, chain, options: { ...options, signal } };
    return await runTurn(s, run, turn);
  } catch (e) {
    // Stopped by the session's turns (an interrupting turn, or a cancel), not by its own caller going away.
    if (e instanceof CallCancelledError && !options.signal?.aborted)
      throw new DomainError(
        'conflict',
        'Cancelled',
        'The turn was cancelled: another turn of the session interrupted it, or its starter cancelled it',
      );
    throw e;
  } finally {
    await turn.end();
  }
}

/** A turn: its answer (recorded before, or produced now), then its records, then the response. */
async function runTurn(s: CompletionDeps, run: TurnRun, turn: Turn | undefined): Promise<CompletionResponse> {
  const started = Date.now();
  const usage = usageWriter(s, run, started);
  const recorded = await recordedAnswer(s, run);
  const answer = recorded ?? (await answerRecordingFailure(s, run, usage));
  // Strictly after the user message, so that the turn keeps its order even when the model answered at once.
  const completedAt = new Date(Math.max(Date.now(), started + 1)).toISOString();
  await beforeRecording(run, { answer, completedAt, usage });
  await recordTurn(s, run, { answer, repeated: recorded !== undefined, started, completedAt, turn, usage });
  return {
    operation_id: run.options.operationId,
    user_prompt: run.admitted.request.user_prompt,
    completion: answer.content,
    content: [{ type: 'text', value: answer.content }],
    citations: answer.citations,
    analysis_results: answer.analysis,
    user_prompt_embedding: [],
    prompt_tokens: answer.promptTokens,
    completion_tokens: answer.completionTokens,
    total_tokens: answer.promptTokens + answer.completionTokens,
    total_cost: answer.cost,
  };
}

/** The turn's answer; a failed or cancelled one is recorded before its error goes on. */
async function answerRecordingFailure(s: CompletionDeps, run: TurnRun, usage: UsageWriter): Promise<Answer> {
  const progress = { streamed: 0 };
  try {
    return await produceAnswer(s, run, progress);
  } catch (error) {
    await recordFailure(s, run, { error, streamed: progress.streamed, usage });
    throw error;
  }
}

/**
 * A version 7 UUID (RFC 9562): the time in milliseconds, then random bits. The turn's messages, usage and
 * tool records take their ids from it, so each partition's new rows land together at the end of its key
 * range: an embedded store's commit writes a few pages where random ids dirtied one per row (completions
 * with a session at 32 connections: 945 to 1,005 req/s with random ids, 1,150 to 1,234 with these).
 */
export const newOperationId = () => {
  const random = randomUUID();
  const ms = Date.now().toString(16).padStart(12, '0');
  return `${ms.slice(0, 8)}-${ms.slice(8)}-7${random.slice(15)}`;
};
