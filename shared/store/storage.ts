// Blob and queue clients: a connection string locally (Azurite), managed identity in Azure.
import { BlobServiceClient, type ContainerClient } from '@azure/storage-blob';
import { QueueServiceClient } from '@azure/storage-queue';
import { azureCredential as credential } from '../auth/azure-credential.js';
import type { StorageConfig } from '../config.js';

export function createBlobService(config: StorageConfig): BlobServiceClient {
  return config.kind === 'connection-string'
    ? BlobServiceClient.fromConnectionString(config.connectionString)
    : new BlobServiceClient(`https://${config.accountName}.blob.core.windows.net`, credential(config.clientId));
}

export function createQueueService(config: StorageConfig): QueueServiceClient {
  return config.kind === 'connection-string'
    ? QueueServiceClient.fromConnectionString(config.connectionString)
    : new QueueServiceClient(`https://${config.accountName}.queue.core.windows.net`, credential(config.clientId));
}

/** A Blob container created on first use, once per process; later calls share the same promise. */
export function lazyContainer(container: ContainerClient): () => Promise<ContainerClient> {
  let ready: Promise<ContainerClient> | undefined;
  return () => (ready ??= container.createIfNotExists().then(() => container));
}
