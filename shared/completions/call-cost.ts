// What a model call may cost, as the budgets count it before the call: its prompt's tokens (counted with the
// tokenizer) and its output limit, at the model's prices.
import type { ChatMessage } from '../models/wire.js';
import { loadTokenCounter } from '../models/tokens.js';

/** Output tokens a call may take when neither the request nor the model sets a limit. */
export const DEFAULT_OUTPUT_LIMIT = 4096;

/** The output limit of a call's request fields. */
export const outputLimit = (parameters: Record<string, unknown>) =>
  Number(parameters.max_tokens ?? parameters.max_completion_tokens) || DEFAULT_OUTPUT_LIMIT;

/** The tokens of a call's messages as the budgets count them (a model that reports no usage is counted so too). */
export async function promptTokensOf(messages: readonly ChatMessage[]): Promise<number> {
  const count = await loadTokenCounter();
  let tokens = 0;
  for (const m of messages) {
    const text =
      typeof m.content === 'string' ? m.content : m.content.map((p) => (p.type === 'text' ? p.text : '')).join('');
    // A few tokens of framing per message, as the chat format adds them.
    tokens += (m.role === 'system' ? systemTokens(text, count) : count(text)) + 4;
  }
  return tokens;
}

/** The largest cost a model call can have: its prompt's tokens and its output limit, at the model's prices. */
export async function largestCost(
  messages: readonly ChatMessage[],
  outputLimit: number,
  prices: { input: number; output: number },
): Promise<number> {
  return (await promptTokensOf(messages)) * prices.input + outputLimit * prices.output;
}

/** Token counts of system messages (an agent's prompt comes with every call), the last 500 kept. */
const systemCounts = new Map<string, number>();
function systemTokens(text: string, countTokens: (text: string) => number): number {
  const known = systemCounts.get(text);
  if (known !== undefined) return known;
  const count = countTokens(text);
  if (systemCounts.size >= 500) {
    const oldest = systemCounts.keys().next();
    if (!oldest.done) systemCounts.delete(oldest.value);
  }
  systemCounts.set(text, count);
  return count;
}
