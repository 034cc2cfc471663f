// Blob and queue clients: a connection string locally (Azurite), managed identity in Azure.
import { DefaultAzureCredential } from '@azure/identity';
import { BlobServiceClient } from '@azure/storage-blob';
import { QueueServiceClient } from '@azure/storage-queue';
import type { StorageConfig } from '../config.js';

const credential = (clientId: string | undefined) =>
  new DefaultAzureCredential(clientId ? { managedIdentityClientId: clientId } : {});

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
