// An embedding AI model as pipelines, retrieval and the semantic cache call it: the model resource, its API
// endpoint and the vector length asked for, read through the resource cache.
import { costOf, money, pricesOf } from '../models/pricing.js';
import { endpointView, MODEL_PROVIDERS } from '../models/endpoint.js';
import { aiModels, apiEndpointConfigurations } from '../providers/types/catalog.js';
import type { ModelGateway } from '../models/gateway.js';
import type { ResourceCache } from '../providers/resource-cache.js';
import { tokensOf } from '../models/tokens.js';

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
  /** The currency of its prices (null: none named), known before it embeds anything. */
  readonly currency: string | null;
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
  /** What embeddings cost, by currency (null: models that name none). */
  readonly costs = new Map<string | null, number>();
  private readonly admitted = new Map<string | null, Promise<void>>();

  /**
   * `currency`: the turn's (its chat model's), whose cost the answer reports. `admit` checks, once per
   * currency and before anything is embedded in it, that the caller's budgets can count it (a spent budget
   * or one kept in another currency refuses).
   */
  constructor(
    private readonly currency: string | null,
    private readonly admit: (currency: string | null) => Promise<void> = () => Promise.resolve(),
  ) {}

  /** Waits for the budgets to admit spending in `currency`. */
  before(currency: string | null): Promise<void> {
    let admitted = this.admitted.get(currency);
    if (!admitted) this.admitted.set(currency, (admitted = this.admit(currency)));
    return admitted;
  }

  add(e: Pick<Embedded, 'cost' | 'currency'>): void {
    this.costs.set(e.currency, money((this.costs.get(e.currency) ?? 0) + e.cost));
  }

  /** The cost in the turn's currency (and in none), what the answer's total_cost adds. */
  get cost(): number {
    let sum = 0;
    for (const [currency, cost] of this.costs)
      if (currency === null || this.currency === null || currency === this.currency) sum += cost;
    return money(sum);
  }
}

/** The embedder of a model object id, or why there is none (a sentence for a 400 or a run error). */
export async function embedderFor(
  s: EmbedderDeps,
  modelObjectId: string,
  dimensions?: number,
): Promise<Embedder | string> {
  const model = await s.resourceCache.get(modelObjectId, aiModels);
  if (!model) return `embedding AI model ${modelObjectId} does not exist`;
  if (model.model_type !== 'embedding') return `AI model ${model.name} is not an embedding model`;
  const endpointDoc = await s.resourceCache.get(model.api_endpoint_object_id, apiEndpointConfigurations);
  const endpoint = endpointDoc && endpointView(endpointDoc);
  if (!endpoint || !MODEL_PROVIDERS.includes(endpoint.provider))
    return `the API endpoint of AI model ${model.name} is missing or not a model endpoint`;
  const deployment = model.deployment_name;
  return {
    version: `${model.object_id}@${model.updated_on}/${dimensions ?? 'default'}`,
    currency: pricesOf(model).currency,
    async embed(inputs, signal) {
      const vectors: number[][] = [];
      let promptTokens = 0;
      for (let i = 0; i < inputs.length; i += EMBEDDING_BATCH) {
        const batch = inputs.slice(i, i + EMBEDDING_BATCH);
        const answer = await s.models.embed({ endpoint, deployment, inputs: batch, dimensions }, { signal });
        vectors.push(...answer.vectors);
        // A model that reports no usage is counted by the service: its inputs' tokens.
        promptTokens += answer.usageUnreported ? await tokensOf(batch.join('')) : answer.promptTokens;
      }
      return { vectors, promptTokens, cost: costOf(model, promptTokens, 0), currency: pricesOf(model).currency };
    },
  };
}
