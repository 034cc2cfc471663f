// Counting tokens as budgets and quotas count them (o200k, gpt-tokenizer's default), for a model that reports
// no usage and for the largest cost a call can have.

/** gpt-tokenizer's counter, loaded on first use: its tables are most of the code a cold start would compile. */
let tokenizer: Promise<(text: string) => number> | undefined;
export const loadTokenCounter = () => (tokenizer ??= import('gpt-tokenizer').then((m) => m.countTokens));

/** The tokens of a text. */
export async function tokensOf(text: string): Promise<number> {
  return text.length === 0 ? 0 : (await loadTokenCounter())(text);
}
