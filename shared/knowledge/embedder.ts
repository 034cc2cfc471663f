// An embedding AI model as pipelines, retrieval and the semantic cache call it: the model resource, its API
// endpoint and the vector length asked for, read through the resource cache.
import { costOf, money, pricesOf } from '../completions/usage.js';
import { endpointView, MODEL_PROVIDERS } from '../models/endpoint.js';
import { aiModels, apiEndpointConfigurations } from '../providers/types/catalog.js';
import type { ModelGateway } from '../models/gateway.js';
import type { ResourceCache } from '../providers/resource-cache.js';

/** What this module uses of the service (the hosts pass the whole of it). */
export interface EmbedderDeps {
  readonly models: ModelGateway;
  readonly resourceCache: ResourceCache;
}

/** Inputs per embeddings request: well under every provider's limit (2,048 for OpenAI). */
export const EMBEDDING_BATCH = 64;

export interface Embedder {
  /** The model's object id and updated_on: embeddings of different models (or versions) are not comparable. */
  readonly version: string;
  embed(inputs: readonly string[], signal?: AbortSignal): Promise<Embedded>;
}

export interface Embedded {
  vectors: number[][];
  promptTokens: number;
  /** At the model's prices (its input price), in `currency` (null: the model names none). */
  cost: number;
  currency: string | null;
}

/**
 * What a completion's embeddings cost (its prompt's, for retrieval and the semantic cache; its searches'),
 * added to the completion's cost. Costs in another currency than the completion's model cannot be added:
 * they are left out (an agent's models are priced in one currency).
 */
export class EmbeddingSpend {
  cost = 0;
  constructor(private readonly currency: string | null) {}

  add(e: Pick<Embedded, 'cost' | 'currency'>): void {
    if (e.currency === null || this.currency === null || e.currency === this.currency) this.cost = money(this.cost + e.cost);
  }
}

/** The embedder of a model object id, or why there is none (a sentence for a 400 or a run error). */
export async function embedderFor(s: EmbedderDeps, modelObjectId: string, dimensions?: number): Promise<Embedder | string> {
  const model = await s.resourceCache.get(modelObjectId, aiModels);
  if (!model) return `embedding AI model ${modelObjectId} does not exist`;
  if (model.model_type !== 'embedding') return `AI model ${model.name} is not an embedding model`;
  const endpointDoc = await s.resourceCache.get(model.api_endpoint_object_id, apiEndpointConfigurations);
  const endpoint = endpointDoc && endpointView(endpointDoc);
  if (!endpoint || !MODEL_PROVIDERS.includes(endpoint.provider)) return `the API endpoint of AI model ${model.name} is missing or not a model endpoint`;
  const deployment = model.deployment_name;
  return {
    version: `${model.object_id}@${model.updated_on}/${dimensions ?? 'default'}`,
    async embed(inputs, signal) {
      const vectors: number[][] = [];
      let promptTokens = 0;
      for (let i = 0; i < inputs.length; i += EMBEDDING_BATCH) {
        const answer = await s.models.embed(endpoint, deployment, inputs.slice(i, i + EMBEDDING_BATCH), dimensions, { signal });
        vectors.push(...answer.vectors);
        promptTokens += answer.promptTokens;
      }
      return { vectors, promptTokens, cost: costOf(model, promptTokens, 0), currency: pricesOf(model).currency };
    },
  };
}
