// The container definitions as the infrastructure reads them (infra/containers.json): name, partition key,
// TTL and the Cosmos indexing policy, all derived from CONTAINER_LIST.
import { CONTAINER_LIST } from './containers.js';
import { cosmosIndexingPolicy } from './cosmos-store.js';

export function containersForInfra() {
  return CONTAINER_LIST.map((c) => ({
    name: c.name,
    partitionKeyPath: c.partitionKeyPath,
    ...(c.defaultTtlSeconds !== undefined ? { defaultTtl: c.defaultTtlSeconds } : {}),
    indexingPolicy: cosmosIndexingPolicy(c),
  }));
}
