// The container definitions as the infrastructure reads them (infra/containers.json): name, partition key,
// TTL and the Cosmos indexing policy, all derived from CONTAINER_LIST, and the knowledge container of the
// vector index with its vector embedding policy.
import { KNOWLEDGE_CONTAINER } from './knowledge/cosmos-vector-index.js';
import { CONTAINER_LIST } from './store/containers.js';
import { cosmosIndexingPolicy } from './store/cosmos-store.js';

export function containersForInfra() {
  return [
    ...CONTAINER_LIST.map((c) => ({
      name: c.name,
      partitionKeyPath: c.partitionKeyPath,
      ...(c.defaultTtlSeconds !== undefined ? { defaultTtl: c.defaultTtlSeconds } : {}),
      indexingPolicy: cosmosIndexingPolicy(c),
    })),
    {
      name: KNOWLEDGE_CONTAINER.id,
      partitionKeyPath: KNOWLEDGE_CONTAINER.partitionKey.paths[0],
      defaultTtl: KNOWLEDGE_CONTAINER.defaultTtl,
      indexingPolicy: KNOWLEDGE_CONTAINER.indexingPolicy,
      vectorEmbeddingPolicy: KNOWLEDGE_CONTAINER.vectorEmbeddingPolicy,
      fullTextPolicy: KNOWLEDGE_CONTAINER.fullTextPolicy,
    },
  ];
}
