// What model calls cost: an AI model's prices per token (its `pricing` per million in a currency, or the
// per-1,000 prices of earlier releases, which name none), and amounts of money rounded as they are recorded.
import type { AiModelDoc } from '../providers/types/catalog.js';

/** A model's prices, as its document carries them. */
export type Priced = Pick<AiModelDoc, 'cost_per_1k_prompt_tokens' | 'cost_per_1k_completion_tokens' | 'pricing'>;

/** The model's prices per token: `pricing` (per million), else the per-1,000 prices, else none. */
export function pricesOf(model: Priced): { input: number; output: number; currency: string | null } {
  if (model.pricing)
    return {
      input: model.pricing.input_per_million / 1e6,
      output: model.pricing.output_per_million / 1e6,
      currency: model.pricing.currency,
    };
  return {
    input: (model.cost_per_1k_prompt_tokens ?? 0) / 1000,
    output: (model.cost_per_1k_completion_tokens ?? 0) / 1000,
    currency: null,
  };
}

/** An amount of money to the millionth, as costs are priced and recorded (sums of floats rounded back). */
export const money = (amount: number) => Math.round(amount * 1e6) / 1e6;

/** Cost of a call from the AI model's prices (rounded to a millionth); 0 when none is configured. */
export function costOf(model: Priced, prompt: number, completion: number): number {
  const prices = pricesOf(model);
  return money(prompt * prices.input + completion * prices.output);
}
