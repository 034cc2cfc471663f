// The vector index: partitions of documents with their embeddings, searched by similarity. One narrow
// interface with two adapters (SQLite with sqlite-vec embedded, Cosmos DB vector search in Azure), held to one
// contract suite. Indexes are named; a document is identified by its source within its index.
import { createHash } from 'node:crypto';

/** A document as indexed: where it came from and the hash of the content its partitions were made from. */
export interface IndexedDocument {
  /** The document URL or blob name: unique within an index. */
  source: string;
  file_name: string;
  title: string;
  /** What wrote it (a data pipeline's object id): a run removes only the documents its pipeline wrote. */
  origin: string;
  /** Content hash (sha256 hex): an unchanged document is not processed again. */
  hash: string;
  /** Epoch milliseconds after which searches no longer return it (cache entries); absent: kept. */
  expires_at?: number;
  /** Group object ids allowed to read it; absent or empty: everyone may. */
  allowed_groups?: readonly string[];
}

/** A document as the index lists it: with the number of its partitions. */
export interface IndexedEntry extends IndexedDocument {
  partitions: number;
}

/** A listed document as the adapters store it: "never expires" is a number too. */
export interface StoredEntry extends Omit<IndexedEntry, 'expires_at'> {
  expires_at: number;
}

export interface Partition {
  /** The text that was embedded. */
  text: string;
  vector: readonly number[];
}

/** `field eq 'value'` clauses, all of which must hold. */
export interface Clause {
  field: 'source' | 'file_name';
  value: string;
}

export interface SearchHit {
  /** Stable for the partition: `{document key}-{position}`. */
  id: string;
  source: string;
  file_name: string;
  title: string;
  text: string;
  /** Cosine similarity: higher is more similar, 1 is the same direction. */
  score: number;
}

/**
 * Who is searching: the group ids of the caller (a partition is found when it is for everyone or one of its
 * groups is among them), or `everything` for the service itself. No readers named: only
 * partitions for everyone.
 */
export type Readers = readonly string[] | 'everything';

export interface SearchOptions {
  filter?: readonly Clause[];
  readers?: Readers;
  /**
   * `hybrid`: the partitions whose words best match `text` (BM25 full-text ranking) are fused with the most
   * similar ones by reciprocal rank, so an exact token (a part number, an error code) is found even where
   * the embedding misses it. Scores stay cosine similarities; the order is the fused rank.
   */
  mode?: 'vector' | 'hybrid';
  /** The words to match in hybrid mode (the prompt). */
  text?: string;
}

/** The constant of reciprocal rank fusion: a result's share is 1 / (RRF_K + its rank) in each list. */
export const RRF_K = 60;

/** Most words of a prompt matched in full-text search. */
const MAX_TERMS = 32;

/** The words of a prompt as full-text terms: trimmed of punctuation at their ends, unique, at most 32. */
export function searchTerms(text: string): string[] {
  const words = text
    .split(/\s+/)
    .map((w) => w.replace(/^[^\p{L}\p{N}]+|[^\p{L}\p{N}]+$/gu, ''))
    .filter((w) => /[\p{L}\p{N}]/u.test(w));
  return [...new Set(words.map((w) => w.toLowerCase()))].slice(0, MAX_TERMS);
}

export interface VectorIndex {
  readonly kind: 'embedded' | 'cosmos';
  /** Replaces every partition of the document (a document written twice keeps one set of partitions). */
  replaceDocument(index: string, doc: IndexedDocument, partitions: readonly Partition[]): Promise<void>;
  /** Removes the document and its partitions; nothing happens when it is not indexed. */
  removeDocument(index: string, source: string): Promise<void>;
  /** The documents of an index (not their partitions). */
  documents(index: string): Promise<IndexedEntry[]>;
  /**
   * Removes every semantic cache entry (indexes named `semantic-cache:…`) written for one of these origins;
   * answers how many.
   */
  removeCached(origins: readonly string[]): Promise<number>;
  /** The partitions most similar to the vector, best first, filtered (clauses and readers) inside the index query. */
  search(index: string, vector: readonly number[], top: number, options?: SearchOptions): Promise<SearchHit[]>;
  close(): Promise<void>;
}

/** Where semantic cache entries live: index names no knowledge index can have (`:` is not allowed there). */
export const CACHE_INDEX_PREFIX = 'semantic-cache:';

/** The stored key of a document: a hash of its source, so ids stay short and free of URL characters. */
export const sourceKey = (source: string) => createHash('sha256').update(source).digest('base64url').slice(0, 22);

/** The clauses as one value per field, or undefined when two clauses on one field can never both hold. */
export function clauseValues(filter: readonly Clause[] = []): Partial<Record<Clause['field'], string>> | undefined {
  const values: Partial<Record<Clause['field'], string>> = {};
  for (const c of filter) {
    if (values[c.field] !== undefined && values[c.field] !== c.value) return undefined;
    values[c.field] = c.value;
  }
  return values;
}

/** A document's readers as stored: lower-cased, unique, sorted; empty for everyone. */
export const groupsOf = (doc: Pick<IndexedDocument, 'allowed_groups'>): string[] =>
  [...new Set((doc.allowed_groups ?? []).map((g) => g.trim().toLowerCase()).filter((g) => g !== ''))].sort();

/** The readers' group ids as matched: lower-cased and unique. */
export const readerGroups = (readers: readonly string[]): string[] => [...new Set(readers.map((g) => g.toLowerCase()))];
