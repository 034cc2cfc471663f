// The semantic cache: answers of an agent, at one version of it, for one knowledge filter and
// one set of model parameters, found by the similarity of the prompt's embedding. Only requests whose answer
// depends on nothing personal are served from it or stored into it: no session history, no attachments. A
// hit costs no model call. Entries live in the vector index under an index name no knowledge index can have
// (`:` is not allowed there), and expire after SEMANTIC_CACHE_TTL_SECONDS, or as soon as a run changes an index
// the agent searches (an answer may quote a document that changed, went away or was closed to some readers).
import { createHash, randomUUID } from 'node:crypto';
import { embedderFor } from './embedder.js';
import { agentTools, type Citation, type PromptEmbeddings } from './retrieval.js';
import { CACHE_INDEX_PREFIX } from './vector-index.js';
import { partitionOf, resourcesIn, resourcesOf } from '../providers/types/resource-type.js';
import { agents, type AgentDoc } from '../providers/types/agent.js';
import { tools } from '../providers/types/catalog.js';
import type { Config } from '../config.js';
import type { VectorIndex } from './vector-index.js';
import type { Log } from '../log.js';
import type { ModelGateway } from '../models/gateway.js';
import type { ResourceCache } from '../providers/resource-cache.js';
import type { DocumentStore } from '../store/types.js';

/** What this module uses of the service (the hosts pass the whole of it). */
export interface CacheDeps {
  readonly config: Config;
  readonly log: Log;
  readonly models: ModelGateway;
  readonly resourceCache: ResourceCache;
  readonly store: DocumentStore;
  readonly vectors: VectorIndex;
}

export interface CachedAnswer {
  completion: string;
  citations: Citation[];
}

export interface CacheHit extends CachedAnswer {
  similarity: number;
}

/** One request's view of the cache: look up before the model call, store after it. */
export interface CacheSlot {
  lookup(): Promise<CacheHit | undefined>;
  store(answer: CachedAnswer): Promise<void>;
}

/**
 * The cache slot of a request, or undefined when the agent has no cache or the request may not use it.
 * `key` is everything besides the prompt that shapes the answer (filter, top N, model parameters).
 */
export async function cacheSlot(
  s: CacheDeps,
  agent: AgentDoc,
  { personal, embeddings, key }: { personal: boolean; embeddings: PromptEmbeddings; key: unknown },
): Promise<CacheSlot | undefined> {
  const settings = agent.cache_settings;
  const cache = settings?.semantic_cache_enabled ? settings.semantic_cache_settings : undefined;
  if (!cache || personal) return undefined;
  const embedder = await embedderFor(s, cache.embedding_ai_model_object_id, cache.embedding_dimensions);
  if (typeof embedder === 'string') {
    s.log.warn('The semantic cache of an agent is not usable', { agent: agent.name, reason: embedder });
    return undefined;
  }
  // The agent's tools as saved are part of the key: a tool's index, top N or minimum score shapes the answer.
  const toolVersions = (await agentTools(s, agent)).map((t) => [t.object_id, t.updated_on]);
  const index = `${CACHE_INDEX_PREFIX}${createHash('sha256')
    .update(JSON.stringify([agent.object_id, agent.updated_on, toolVersions, embedder.version, key]))
    .digest('hex')
    .slice(0, 40)}`;
  const threshold = cache.minimum_similarity_threshold;
  const vector = () => embeddings.of(embedder);
  return {
    async lookup() {
      const [best] = await s.vectors.search(index, await vector(), 1);
      if (!best || best.score < threshold) return undefined;
      const answer = JSON.parse(best.text) as CachedAnswer;
      return { ...answer, similarity: best.score };
    },
    async store(answer) {
      const id = randomUUID();
      await s.vectors.replaceDocument(
        index,
        {
          source: id,
          file_name: '',
          title: '',
          origin: agent.object_id,
          hash: '',
          expires_at: Date.now() + s.config.knowledge.cacheTtlSeconds * 1000,
        },
        [{ text: JSON.stringify(answer), vector: await vector() }],
      );
    },
  };
}

/** Forgets the cached answers of every agent with a knowledge tool on `index`; answers how many went. */
export async function forgetAnswersFrom(s: CacheDeps, index: string): Promise<number> {
  const resources = resourcesIn(s.store);
  const live = { field: 'deleted', op: 'ne', value: true } as const;
  const { items: searching } = await resources.query({
    partition: partitionOf(tools),
    where: [live, { field: 'index_name', op: 'eq', value: index }],
  });
  if (searching.length === 0) return 0;
  const toolIds = new Set(searching.map((t) => t.object_id.toLowerCase()));
  const { items: all } = await resourcesOf(s.store, agents).query({ partition: partitionOf(agents), where: [live] });
  const using = all.filter((a) => (a.tool_object_ids ?? []).some((id) => toolIds.has(id.toLowerCase())));
  return using.length > 0 ? s.vectors.removeCached(using.map((a) => a.object_id)) : 0;
}
