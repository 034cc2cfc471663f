// The one way the service calls a model for a caller: the main call of a turn and each of its tool rounds,
// the prompt rewrite, a workflow plugin's `svc.complete`, an evaluation's judge. Before the call its largest
// possible cost (the prompt's tokens counted, plus its output limit, at the model's prices) is held in every
// budget that applies to the caller and the agent, and the call is refused (429 BudgetExceeded) when one
// would be exceeded; after it the hold becomes what the call cost, whatever its outcome.
import type { Principal } from '../auth/principal.js';
import type { ChatMessage } from '../models/wire.js';
import type { AgentDoc } from '../providers/types/agent.js';
import { largestCost, outputLimit, type Budgets } from './budgets.js';
import { costOf, pricesOf } from './usage.js';

/** Whose budgets a model call counts against: the caller's, with this agent's. */
export interface Payer {
  principal: Principal;
  agent: Pick<AgentDoc, 'name' | 'cost_center'>;
}

/** A model's prices, as its document carries them. */
export type Priced = Parameters<typeof pricesOf>[0];

export interface Metered<T> {
  answer: T;
  /** What the call cost at the model's prices. */
  cost: number;
  /** The Svc-Budget header of the budget closest to its limit after the call's hold. */
  headers: Record<string, string>;
}

/** Runs `call` (the model call of `messages` with `parameters`) counted against the payer's budgets. */
export async function metered<T extends { promptTokens: number; completionTokens: number }>(
  budgets: Budgets,
  payer: Payer,
  model: Priced,
  request: { messages: readonly ChatMessage[]; parameters: Record<string, unknown> },
  call: () => Promise<T>,
): Promise<Metered<T>> {
  const prices = pricesOf(model);
  const held = await budgets.reserve(payer.principal, payer.agent, () => largestCost(request.messages, outputLimit(request.parameters), prices), prices.currency);
  let cost = 0;
  try {
    const answer = await call();
    cost = costOf(model, answer.promptTokens, answer.completionTokens);
    return { answer, cost, headers: held.headers };
  } finally {
    budgets.settle(held.reservation, cost);
  }
}
