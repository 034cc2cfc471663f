// Retrieval in completions (CONTRACT 10.6): an agent's knowledge tools name indexes; the prompt is embedded
// with each index's embedding model (the one its data pipeline writes with), the most similar partitions are
// found with the request's filter applied inside the index query, and they become the model's context and
// the answer's citations. Only the agent's own tools are searched, so a caller reaches only the indexes of
// agents they may use.
import { validationError } from '../http/errors.js';
import { partitionOf, type ResourceDoc } from '../providers/resource-type.js';
import { dataPipelines } from '../providers/types/catalog.js';
import type { Services } from '../services.js';
import { embedderFor, type Embedder } from './embedder.js';
import type { Clause, SearchHit } from './vector-index.js';

export interface Citation {
  id: string;
  source: string;
  title: string;
  text: string;
  score: number;
}

const DEFAULT_TOP_N = 5;

/** The prompt's embedding per embedding model, computed once per request whoever asks (retrieval, cache). */
export class PromptEmbeddings {
  private readonly vectors = new Map<string, Promise<number[]>>();
  constructor(
    private readonly prompt: string,
    private readonly signal?: AbortSignal,
  ) {}

  of(embedder: Embedder): Promise<number[]> {
    let vector = this.vectors.get(embedder.version);
    if (!vector) {
      vector = embedder.embed([this.prompt], this.signal).then((r) => r.vectors[0] ?? []);
      this.vectors.set(embedder.version, vector);
    }
    return vector;
  }
}

const notReady = (message: string) => validationError([{ field: 'agent_name', message }]);

/** The knowledge tools of an agent: index and top_n. */
export async function knowledgeTools(s: Services, agent: ResourceDoc): Promise<{ index: string; topN: number }[]> {
  const ids = Array.isArray(agent.tool_object_ids) ? (agent.tool_object_ids as unknown[]).filter((x): x is string => typeof x === 'string') : [];
  if (ids.length === 0) return [];
  const tools = await Promise.all(ids.map((id) => s.resourceCache.get(id)));
  return tools.filter((t) => t?.tool_type === 'knowledge').map((t) => ({ index: String(t?.index_name), topN: typeof t?.top_n === 'number' ? t.top_n : DEFAULT_TOP_N }));
}

/**
 * The partitions most similar to the prompt across the agent's knowledge indexes, best first: `topN` (the
 * request's index_top_n, else each tool's top_n) in all.
 */
export async function retrieve(s: Services, agent: ResourceDoc, embeddings: PromptEmbeddings, filter: readonly Clause[], requestTopN: number | undefined): Promise<Citation[]> {
  const tools = await knowledgeTools(s, agent);
  if (tools.length === 0) return [];
  const found = await Promise.all(
    tools.map(async (tool) => {
      const pipeline = await s.resourceCache.findBy(partitionOf(dataPipelines), 'index_name', tool.index);
      // An index nothing writes yet has nothing to find.
      if (!pipeline) return [];
      const embedder = await embedderFor(s, pipeline.embedding_ai_model_object_id, pipeline.embedding_dimensions as number | undefined);
      if (typeof embedder === 'string') throw notReady(`Agent ${agent.name} cannot search index ${tool.index}: ${embedder}`);
      return s.vectors.search(tool.index, await embeddings.of(embedder), requestTopN ?? tool.topN, filter);
    }),
  );
  const top = requestTopN ?? Math.max(...tools.map((t) => t.topN));
  return found
    .flat()
    .sort((a: SearchHit, b: SearchHit) => b.score - a.score)
    .slice(0, top)
    .map((h) => ({ id: h.id, source: h.source, title: h.title, text: h.text, score: h.score }));
}

/** The retrieved partitions as the model reads them: numbered, with their titles and sources. */
export function knowledgeContext(citations: readonly Citation[]): string {
  const sources = citations.map((c, i) => `[${i + 1}] ${c.title} (${c.source})\n${c.text}`).join('\n\n');
  return `Answer from the following sources where they are relevant, and say which ones you used by their numbers.\n\n${sources}`;
}
