// A text's token count with marks: the character offset at which each further MARK_EVERY tokens would be
// passed. Computed once, where the text is extracted (extract-worker.ts); a completion then cuts the text to a
// token budget with a lookup, never tokenizing on the request thread (nor loading a tokenizer).

export const MARK_EVERY = 256;

export interface TokenMarks {
  /** Tokens of the whole text. */
  count: number;
  /** marks[k]: the longest prefix (in characters) that has at most (k + 1) * MARK_EVERY tokens. */
  marks: number[];
}

/** The characters of the text that fit in `budget` tokens, by its marks (all of it when it fits). */
export function charsWithin(t: TokenMarks, textLength: number, budget: number): number {
  if (t.count <= budget) return textLength;
  const k = Math.floor(budget / MARK_EVERY) - 1;
  return k < 0 ? 0 : (t.marks[k] ?? textLength);
}
