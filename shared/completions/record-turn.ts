// Recording a turn: its messages on the session, its usage record (completed, blocked, failed or cancelled), its
// tokens in the quotas, its tool executions for analytics and its answer in the semantic cache. An answer
// recorded before for the same operation is read back instead of asking the model again.
import { ownerKey } from '../auth/principal.js';
import { completionPromptId } from '../conversations/conversations.js';
import type { Turn } from '../conversations/turns.js';
import { DomainError } from '../errors.js';
import { costOf, pricesOf } from '../models/pricing.js';
import { CallCancelledError } from '../models/upstream-errors.js';
import type { ToolExecution } from '../tools/loop.js';
import { recordUsage, usageRecord, type Protocol, type UsageDoc } from './usage.js';
import type { CompletionDeps } from './completion-deps.js';
import { warned, type Answer, type TurnRun } from './turn.js';

/** A tool execution as analytics count it. */
interface ToolRunDoc extends ToolExecution {
  id: string;
  pk: string;
  operation_id: string;
  session_id: string | null;
  agent_name: string;
  upn: string;
  timestamp: string;
}

declare module '../store/types.js' {
  interface StoredDocs {
    toolRuns: ToolRunDoc;
  }
}

/** What a usage record of the turn says besides who, when and for which operation. */
export type UsageFields = Pick<UsageDoc, 'status'> & Partial<UsageDoc>;

/** Writes a usage record of the turn, ended at `at`, answered by `deployment` (the workflow's model's by default). */
export type UsageWriter = (at: string, fields: UsageFields, deployment?: string) => Promise<void>;

/** The writer of the turn's usage records, with what each carries: how it came in, whose budget, which currency. */
export function usageWriter(
  s: Pick<CompletionDeps, 'store'>,
  { principal, admitted, chain, options }: TurnRun,
  started: number,
): UsageWriter {
  const { agent, sessionId, facade } = admitted;
  const currency = chain.kind === 'chat' ? pricesOf(chain.model).currency : null;
  const tags: { protocol: Protocol; cost_center?: string; currency?: string } = {
    protocol: facade?.protocol ?? 'core',
    ...(agent.cost_center ? { cost_center: agent.cost_center } : {}),
    ...(currency ? { currency } : {}),
  };
  const workflowDeployment = chain.kind === 'chat' ? chain.model.deployment_name : '';
  return (at, fields, deployment = workflowDeployment) =>
    recordUsage(s.store.container('usage'), {
      ...usageRecord(principal, {
        operationId: options.operationId,
        sessionId,
        agentName: agent.name,
        deployment,
        at,
        started,
      }),
      ...tags,
      ...fields,
    });
}

/** An answer's counts as its usage record gives them. */
const counts = (answer: Answer) => ({
  prompt_tokens: answer.promptTokens,
  completion_tokens: answer.completionTokens,
  total_tokens: answer.promptTokens + answer.completionTokens,
  cost: answer.cost,
});

/**
 * The answer already recorded for the operation when it may repeat (a redelivery, or a caller's retry), with the cost
 * its usage record says; undefined when there is none (or no session to hold one).
 */
export async function recordedAnswer(
  s: Pick<CompletionDeps, 'conversations' | 'store'>,
  { principal, admitted, chain, options }: TurnRun,
): Promise<Answer | undefined> {
  if (!admitted.sessionId || !options.mayRepeat) return undefined;
  const recorded = await s.conversations.recordedAnswer(principal.upn, options.operationId);
  if (!recorded) return undefined;
  const usage = await s.store.container('usage').read(ownerKey(principal.upn), options.operationId);
  const promptTokens = usage?.prompt_tokens ?? 0;
  return {
    content: recorded.text,
    promptTokens,
    completionTokens: recorded.tokens,
    cost: usage?.cost ?? (chain.kind === 'chat' ? costOf(chain.model, promptTokens, recorded.tokens) : 0),
    citations: recorded.citations ?? [],
    analysis: [],
  };
}

/**
 * Records a turn whose answer failed or was cancelled, so analytics can tell error rates. A cancelled stream's
 * completion tokens are estimated by its pieces (about a token each).
 */
export async function recordFailure(
  s: Pick<CompletionDeps, 'log'>,
  { admitted, options }: TurnRun,
  { error, streamed, usage }: { error: unknown; streamed: number; usage: UsageWriter },
): Promise<void> {
  const cancelled = error instanceof CallCancelledError;
  const code = error instanceof DomainError ? error.code : 'Error';
  if (!cancelled)
    s.log.warn('Completion failed', {
      operation_id: options.operationId,
      agent_name: admitted.agent.name,
      code,
      error: error instanceof Error ? error.message : String(error),
    });
  await usage(
    new Date().toISOString(),
    cancelled
      ? { status: 'Cancelled', completion_tokens: streamed, total_tokens: streamed }
      : { status: 'Failed', error_code: code },
  );
}

/** Runs the run's last step before recording; cancelled then, the tokens were spent and the turn is not recorded. */
export async function beforeRecording(
  { options }: TurnRun,
  { answer, completedAt, usage }: { answer: Answer; completedAt: string; usage: UsageWriter },
): Promise<void> {
  try {
    await options.beforeRecord?.();
  } catch (e) {
    if (e instanceof CallCancelledError) await usage(completedAt, { ...counts(answer), status: 'Cancelled' });
    throw e;
  }
}

/** How a turn is recorded: its answer, whether it was recorded before, when it ran, its listing on the session. */
export interface TurnRecord {
  answer: Answer;
  /** The answer was read back from an earlier run of the operation: its messages and quotas are counted already. */
  repeated: boolean;
  started: number;
  completedAt: string;
  turn: Turn | undefined;
  usage: UsageWriter;
}

/**
 * Records the turn: its messages on the session (while its listing is as it was), its usage record, its tokens in the
 * quotas, its tool executions and its answer in the semantic cache; independent writes, side by side.
 */
export async function recordTurn(
  s: CompletionDeps,
  { principal, admitted, options }: TurnRun,
  { answer, repeated, started, completedAt, turn, usage }: TurnRecord,
): Promise<void> {
  const { request, agent, sessionId, session } = admitted;
  const operationId = options.operationId;
  // A blocked turn is kept for its user, and never sent to a model as history.
  const blocked = answer.block ? { blocked: true as const } : {};
  // A turn cancelled while it ran (an interrupting turn, or its starter) records nothing: its record is
  // written only while its listing is as it was.
  const listing = session && !repeated ? await turn?.listing() : undefined;
  await Promise.all([
    session && !repeated
      ? s.conversations
          .recordTurn(session, {
            user: {
              sender: 'User',
              sender_display_name: principal.name ?? principal.upn,
              text: request.user_prompt,
              tokens: answer.promptTokens,
              timestamp: new Date(started).toISOString(),
              operation_id: operationId,
              agent_name: agent.name,
              ...blocked,
            },
            assistant: {
              sender: 'Assistant',
              sender_display_name: agent.name,
              text: answer.content,
              tokens: answer.completionTokens,
              timestamp: completedAt,
              operation_id: operationId,
              agent_name: agent.name,
              citations: answer.citations,
              content_artifacts: [...(answer.executions ?? []), ...(answer.artifacts ?? [])],
              completion_prompt_id: answer.prompt ? completionPromptId(operationId) : null,
              ...blocked,
            },
            prompt: answer.prompt,
            listing,
          })
          .then((removed) => removed && turn?.recorded())
      : undefined,
    usage(
      completedAt,
      {
        ...counts(answer),
        ...(answer.block
          ? {
              status: 'Blocked',
              shielding: {
                plugin_name: answer.block.plugin_name,
                stage: answer.block.stage,
                verdict: answer.block.verdict,
              },
            }
          : { status: 'Completed' }),
      },
      answer.deployment,
    ),
    repeated ? undefined : s.quotas.recordTokens(principal, agent.name, answer.promptTokens + answer.completionTokens),
    // One record per tool execution, for the tool analytics (ids follow the operation: a redelivery rewrites them).
    ...(answer.executions ?? []).map((e, i) =>
      s.store.container('toolRuns').upsert({
        ...e,
        id: `${operationId}-${i}`,
        pk: ownerKey(principal.upn),
        operation_id: operationId,
        session_id: sessionId ?? null,
        agent_name: agent.name,
        upn: ownerKey(principal.upn),
        timestamp: completedAt,
      }),
    ),
    answer.cache
      ?.store({ completion: answer.content, citations: answer.citations })
      .catch(warned(s, 'The semantic cache could not be written')),
  ]);
}
