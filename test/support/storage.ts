// Blob containers of the service's storage account (Azurite in tests), for tests that put or check blobs
// beside the service.
import { BlobServiceClient, type ContainerClient } from '@azure/storage-blob';
import type { Services } from '../../shared/services.js';

export function containerOf(services: Services, name: string): ContainerClient {
  const storage = services.config.storage;
  if (storage.kind !== 'connection-string') throw new Error('Tests reach storage by connection string');
  return BlobServiceClient.fromConnectionString(storage.connectionString).getContainerClient(name);
}
