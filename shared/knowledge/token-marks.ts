// A text's token count with marks: the character offset at which each further MARK_EVERY tokens would be
// passed. Computed once, where the text is extracted; a completion then cuts the text to a token budget
// with a lookup, never tokenizing on the request thread.
import { decode, encodeGenerator } from 'gpt-tokenizer/encoding/cl100k_base';

export const MARK_EVERY = 256;

export interface TokenMarks {
  /** Tokens of the whole text. */
  count: number;
  /** marks[k]: the longest prefix (in characters) that has at most (k + 1) * MARK_EVERY tokens. */
  marks: number[];
}

export function tokenMarks(text: string): TokenMarks {
  const marks: number[] = [];
  let count = 0;
  let offset = 0;
  // Each piece is a whole pre-tokenized segment of the text, so its decoded length is its length in the text.
  for (const piece of encodeGenerator(text)) {
    while (count + piece.length > (marks.length + 1) * MARK_EVERY) marks.push(offset);
    count += piece.length;
    offset += decode(piece).length;
  }
  return { count, marks };
}

/** The characters of the text that fit in `budget` tokens, by its marks (all of it when it fits). */
export function charsWithin(t: TokenMarks, textLength: number, budget: number): number {
  if (t.count <= budget) return textLength;
  const k = Math.floor(budget / MARK_EVERY) - 1;
  return k < 0 ? 0 : (t.marks[k] ?? textLength);
}
