// Retrieval in completions: an agent's knowledge tools name indexes; the prompt is embedded
// with each index's embedding model (the one its data pipeline writes with), the most similar partitions are
// found with the request's filter applied inside the index query, and they become the model's context and
// the answer's citations. Only the agent's own tools are searched, so a caller reaches only the indexes of
// agents they may use.
import { z } from 'zod';
import { validationError } from '../errors.js';
import type { AgentDoc } from '../providers/types/agent.js';
import { tools as toolKind, type ToolDoc } from '../providers/types/catalog.js';
import { dataPipelines } from '../providers/types/data-pipelines.js';
import { embedderFor, type Embedder, type EmbeddingSpend } from './embedder.js';
import type { Clause, SearchHit } from './vector-index.js';
import type { VectorIndex } from './vector-index.js';
import type { ModelGateway } from '../models/gateway.js';
import type { ResourceCache } from '../providers/resource-cache.js';

/** What this module uses of the service (the hosts pass the whole of it). */
export interface RetrievalDeps {
  readonly models: ModelGateway;
  readonly resourceCache: ResourceCache;
  readonly vectors: VectorIndex;
}

/** What a caller's search is limited to: the request's filter, and the groups the caller reads as. */
export interface KnowledgeScope {
  filter: readonly Clause[];
  readers: readonly string[];
}

/** A passage an answer drew on: its partition id, the document's source and title, the text and its similarity. */
export const Citation = z
  .object({ id: z.string(), source: z.string(), title: z.string(), text: z.string(), score: z.number() })
  .meta({ id: 'Citation' });
export type Citation = z.output<typeof Citation>;

/**
 * A citation of a web page (the protocols' URL citations and resource links), not of an uploaded or indexed document.
 */
export const isWebPage = (c: Citation) => /^https?:\/\//i.test(c.source);

const DEFAULT_TOP_N = 5;

/** The prompt's embedding per embedding model, computed once per request whoever asks (retrieval, cache). */
export class PromptEmbeddings {
  private readonly vectors = new Map<string, Promise<number[]>>();
  constructor(
    /** The text embedded: the prompt (or the model's search query). Hybrid searches match its words too. */
    readonly prompt: string,
    private readonly signal?: AbortSignal,
    /** Where the embeddings' cost is added up, for the completion that asked. */
    private readonly spend?: EmbeddingSpend,
  ) {}

  of(embedder: Embedder): Promise<number[]> {
    let vector = this.vectors.get(embedder.version);
    if (!vector) {
      // Nothing is embedded before the caller's budgets admit its currency.
      vector = (this.spend?.before(embedder.currency) ?? Promise.resolve())
        .then(() => embedder.embed([this.prompt], this.signal))
        .then((r) => {
          this.spend?.add(r);
          return r.vectors[0] ?? [];
        });
      this.vectors.set(embedder.version, vector);
    }
    return vector;
  }
}

const notReady = (message: string) => validationError([{ field: 'agent_name', message }]);

export interface KnowledgeTool {
  index: string;
  topN: number;
  /** `always`: every completion retrieves; `on_demand`: offered to the model as a search function. */
  retrieval: 'always' | 'on_demand';
  /** Partitions scoring below it are neither given to the model nor cited. */
  minimumScore: number | undefined;
  /** `hybrid`: full-text and vector rankings fused; `vector` (default): similarity alone. */
  searchMode: 'vector' | 'hybrid';
}

/** The tools of an agent, read through the resource cache (tools that no longer exist are skipped). */
export async function agentTools(s: RetrievalDeps, agent: AgentDoc): Promise<ToolDoc[]> {
  const tools = await Promise.all((agent.tool_object_ids ?? []).map((id) => s.resourceCache.get(id, toolKind)));
  return tools.filter((t) => t !== undefined);
}

/** A knowledge tool's settings, defaults applied; undefined for a tool of another type. */
export const knowledgeTool = (t: ToolDoc): KnowledgeTool | undefined =>
  t.tool_type === 'knowledge' && t.index_name !== undefined
    ? {
        index: t.index_name,
        topN: t.top_n ?? DEFAULT_TOP_N,
        retrieval: t.retrieval ?? 'always',
        minimumScore: t.minimum_score,
        searchMode: t.search_mode ?? 'vector',
      }
    : undefined;

/** The hits a tool keeps: those at or above its minimum score. */
export function aboveMinimum(tool: Pick<KnowledgeTool, 'minimumScore'>, hits: SearchHit[]): SearchHit[] {
  const minimum = tool.minimumScore;
  return minimum === undefined ? hits : hits.filter((h) => h.score >= minimum);
}

/** One search of a knowledge index: the prompt's embeddings, the caller's scope, how many and how. */
export interface IndexSearch {
  index: string;
  embeddings: PromptEmbeddings;
  scope: KnowledgeScope;
  top: number;
  mode?: KnowledgeTool['searchMode'];
}

/**
 * The most similar partitions of one index the caller may read, embedded with the model its data pipeline writes with.
 */
export async function searchIndex(
  s: RetrievalDeps,
  agent: AgentDoc,
  { index, embeddings, scope, top, mode = 'vector' }: IndexSearch,
): Promise<SearchHit[]> {
  const pipeline = await s.resourceCache.findBy(dataPipelines, 'index_name', index);
  // An index nothing writes yet has nothing to find.
  if (!pipeline) return [];
  const embedder = await embedderFor(s, pipeline.embedding_ai_model_object_id, pipeline.embedding_dimensions);
  if (typeof embedder === 'string') throw notReady(`Agent ${agent.name} cannot search index ${index}: ${embedder}`);
  return s.vectors.search(index, await embeddings.of(embedder), top, {
    filter: scope.filter,
    readers: scope.readers,
    mode,
    text: embeddings.prompt,
  });
}

export const citationOf = (h: SearchHit): Citation => ({
  id: h.id,
  source: h.source,
  title: h.title,
  text: h.text,
  score: h.score,
});

/**
 * The partitions most similar to the prompt across the agent's knowledge indexes that always retrieve, best
 * first: `topN` (the request's index_top_n, else each tool's top_n) in all.
 */
export async function retrieve(
  s: RetrievalDeps,
  agent: AgentDoc,
  {
    embeddings,
    scope,
    topN: requestTopN,
  }: { embeddings: PromptEmbeddings; scope: KnowledgeScope; topN: number | undefined },
): Promise<Citation[]> {
  const tools = (await agentTools(s, agent))
    .map(knowledgeTool)
    .filter((t): t is KnowledgeTool => t?.retrieval === 'always');
  if (tools.length === 0) return [];
  const found = await Promise.all(
    tools.map(async (tool) =>
      aboveMinimum(
        tool,
        await searchIndex(s, agent, {
          index: tool.index,
          embeddings,
          scope,
          top: requestTopN ?? tool.topN,
          mode: tool.searchMode,
        }),
      ),
    ),
  );
  const top = requestTopN ?? Math.max(...tools.map((t) => t.topN));
  return found
    .flat()
    .sort((a, b) => b.score - a.score)
    .slice(0, top)
    .map(citationOf);
}

/** The retrieved partitions as the model reads them: numbered, with their titles and sources. */
export function knowledgeContext(citations: readonly Citation[]): string {
  const sources = citations.map((c, i) => `[${i + 1}] ${c.title} (${c.source})\n${c.text}`).join('\n\n');
  return (
    `Answer from the following sources where they are relevant, and say which ones you used by their ` +
    `numbers.\n\n${sources}`
  );
}
