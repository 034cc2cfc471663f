// Blob and queue clients: a connection string locally (Azurite), managed identity in Azure.
import { BlobServiceClient, type ContainerClient } from '@azure/storage-blob';
import { QueueServiceClient } from '@azure/storage-queue';
import { azureCredential as credential } from '../auth/azure-credential.js';
import type { StorageConfig } from '../config.js';

/** `maxTries` 1 for probes (readiness): an answer now, not after the SDK's retries. */
export function createBlobService(config: StorageConfig, options: { maxTries?: number } = {}): BlobServiceClient {
  const pipeline = options.maxTries ? { retryOptions: { maxTries: options.maxTries } } : {};
  return config.kind === 'connection-string'
    ? BlobServiceClient.fromConnectionString(config.connectionString, pipeline)
    : new BlobServiceClient(`https://${config.accountName}.blob.core.windows.net`, credential(config.clientId), pipeline);
}

export function createQueueService(config: StorageConfig, options: { maxTries?: number } = {}): QueueServiceClient {
  const pipeline = options.maxTries ? { retryOptions: { maxTries: options.maxTries } } : {};
  return config.kind === 'connection-string'
    ? QueueServiceClient.fromConnectionString(config.connectionString, pipeline)
    : new QueueServiceClient(`https://${config.accountName}.queue.core.windows.net`, credential(config.clientId), pipeline);
}

/** A Blob container created on first use, once per process; later calls share the same promise. */
export function lazyContainer(container: ContainerClient): () => Promise<ContainerClient> {
  let ready: Promise<ContainerClient> | undefined;
  return () => (ready ??= container.createIfNotExists().then(() => container));
}
