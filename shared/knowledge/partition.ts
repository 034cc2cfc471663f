// Partitioning by tokens with overlap, counted by the tokenizer of the OpenAI embedding models (cl100k_base),
// so a partition never exceeds what the embedding model is asked to read.
import { decode, encode } from 'gpt-tokenizer/encoding/cl100k_base';

export interface PartitionOptions {
  sizeTokens: number;
  overlapTokens: number;
}

/** The document's text in windows of `sizeTokens` tokens, each starting `sizeTokens - overlapTokens` after the last. */
export function partitionText(text: string, { sizeTokens, overlapTokens }: PartitionOptions): string[] {
  const normalized = text
    .replace(/\r\n?/g, '\n')
    .replace(/[ \t]+\n/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  if (normalized.length === 0) return [];
  const tokens = encode(normalized);
  const step = Math.max(1, sizeTokens - overlapTokens);
  const partitions: string[] = [];
  for (let start = 0; start < tokens.length; start += step) {
    // A window may cut a character that spans tokens: the replacement character it leaves is dropped.
    const piece = decode(tokens.slice(start, start + sizeTokens))
      .replace(/\uFFFD/g, '')
      .trim();
    if (piece.length > 0) partitions.push(piece);
    if (start + sizeTokens >= tokens.length) break;
  }
  return partitions;
}

/**
 * One partition per Markdown section (a heading line and the text up to the next heading); a section longer
 * than `sizeTokens` is cut into token windows as partitionText cuts a document. Text before the first
 * heading is a section of its own.
 */
export function partitionMarkdown(text: string, options: PartitionOptions): string[] {
  const sections: string[] = [];
  let current: string[] = [];
  let fenced = false;
  for (const line of text.replace(/\r\n?/g, '\n').split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    if (!fenced && /^#{1,6}\s/.test(line) && current.some((l) => l.trim().length > 0)) {
      sections.push(current.join('\n'));
      current = [];
    }
    current.push(line);
  }
  sections.push(current.join('\n'));
  return sections.flatMap((section) =>
    encode(section).length <= options.sizeTokens
      ? [section.trim()].filter((t) => t.length > 0)
      : partitionText(section, options),
  );
}
