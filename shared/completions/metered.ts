// The one way the service calls a model for a caller: the main call of a turn and each of its tool rounds,
// the prompt rewrite, a workflow plugin's `svc.complete`, an evaluation's judge. Before the call its largest
// possible cost (the prompt's tokens counted, plus its output limit, at the model's prices) is held in every
// budget that applies to the caller and the agent, and the call is refused (429 BudgetExceeded) when one
// would be exceeded; after it the hold becomes what the call cost, whatever its outcome (counted by the service
// when the model reports no usage; a call cut midway costs its prompt and what it streamed, one past its
// deadline all that was held for it).
import type { Principal } from '../auth/principal.js';
import type { ChatMessage, ModelAnswer } from '../models/wire.js';
import type { AgentDoc } from '../providers/types/agent.js';
import { EmbeddingSpend } from '../knowledge/embedder.js';
import { CallCancelledError, UpstreamError } from '../models/upstream-errors.js';
import { tokensOf } from '../models/tokens.js';
import type { Budgets } from './budgets.js';
import { largestCost, outputLimit, promptTokensOf } from './call-cost.js';
import { costOf, pricesOf, type Priced } from '../models/pricing.js';

/** Whose budgets a model call counts against: the caller's, with this agent's. */
export interface Payer {
  principal: Principal;
  agent: Pick<AgentDoc, 'name' | 'cost_center'>;
}

export interface Metered<T> {
  answer: T;
  /** What the call cost at the model's prices. */
  cost: number;
  /** The Svc-Budget header of the budget closest to its limit after the call's hold. */
  headers: Record<string, string>;
}

/** A model call to meter: its messages and request fields, and for a streamed call the text it has streamed so far. */
export interface MeteredRequest {
  messages: readonly ChatMessage[];
  parameters: Record<string, unknown>;
  streamed?: () => string;
}

/** What a metered call answers: a model's answer, with its usage as the model reported it (or not). */
type Answered = Pick<ModelAnswer, 'content' | 'promptTokens' | 'completionTokens' | 'usageUnreported' | 'toolCalls'>;

/**
 * Failures after which the model may have done all the work held for: it went past the deadline, or answered too much.
 */
const UNKNOWN_SPEND = new Set(['UpstreamTimeout', 'UpstreamResponseTooLarge']);

/**
 * Runs `call` (the model call of `messages` with `parameters`) counted against the payer's budgets. A model
 * that reports no usage is counted by the service (its prompt and its answer). A call that fails once the
 * model has begun costs what is known of it: cancelled by its caller or cut after streaming some of its
 * answer, its prompt and what it streamed; past its deadline or answering too much, all that was held for
 * it (what the model spent is not known). One that fails before (refused, unreachable) costs nothing.
 */
export async function metered<T extends Answered>(
  budgets: Budgets,
  { payer, model, request }: { payer: Payer; model: Priced; request: MeteredRequest },
  call: () => Promise<T>,
): Promise<Metered<T>> {
  const prices = pricesOf(model);
  const held = await budgets.reserve(payer.principal, payer.agent, {
    amount: () => largestCost(request.messages, outputLimit(request.parameters), prices),
    currency: prices.currency,
  });
  let cost = 0;
  try {
    const answer = await counted(request, await call());
    cost = costOf(model, answer.promptTokens, answer.completionTokens);
    return { answer, cost, headers: held.headers };
  } catch (e) {
    const streamed = request.streamed?.() ?? '';
    const output =
      e instanceof UpstreamError && UNKNOWN_SPEND.has(e.code)
        ? outputLimit(request.parameters)
        : await tokensOf(streamed);
    if (output > 0 || e instanceof CallCancelledError)
      cost = await largestCost(request.messages, output, prices).catch(() => 0);
    throw e;
  } finally {
    budgets.settle(held.reservation, cost);
  }
}

/** The answer with the service's own counts where the model reported none. */
async function counted<T extends Answered>(request: MeteredRequest, answer: T): Promise<T> {
  if (!answer.usageUnreported) return answer;
  const written = [answer.content, ...(answer.toolCalls ?? []).map((c) => `${c.name}${c.arguments}`)].join('');
  return { ...answer, promptTokens: await promptTokensOf(request.messages), completionTokens: await tokensOf(written) };
}

/**
 * The embeddings of a turn (retrieval, the semantic cache, searches), counted for the payer: nothing is
 * embedded in a currency before the payer's budgets admit it. `currency` is the one the turn's answer reports.
 */
export function meteredEmbeddings(budgets: Budgets, payer: Payer, currency: string | null): EmbeddingSpend {
  return new EmbeddingSpend(currency, (c) =>
    budgets.check(payer.principal, payer.agent, () => Promise.resolve(c)).then(() => undefined),
  );
}

/** Charges what a turn's embeddings cost, in each currency they were spent in (whatever became of the turn). */
export async function chargeEmbeddings(budgets: Budgets, payer: Payer, spend: EmbeddingSpend): Promise<void> {
  for (const [currency, cost] of spend.costs) await budgets.charge(payer.principal, payer.agent, { currency, cost });
}
