// Blob and queue clients: a connection string locally (Azurite), managed identity in Azure. A Storage
// token comes from the credential gate, bound to the account's URL; a client of a storage account that
// users name (a data source's account_url) also connects only to addresses the outbound rules allow.
import type { Agent } from 'node:https';
import { BlobServiceClient, type ContainerClient } from '@azure/storage-blob';
import { QueueServiceClient } from '@azure/storage-queue';
import type { CredentialGate } from '../net/credential-gate.js';
import type { StorageConfig } from '../config.js';

/** `maxTries` 1 for probes (readiness): an answer now, not after the SDK's retries. */
export function createBlobService(config: StorageConfig, gate: CredentialGate, options: { maxTries?: number } = {}): BlobServiceClient {
  const pipeline = options.maxTries ? { retryOptions: { maxTries: options.maxTries } } : {};
  if (config.kind === 'connection-string') return BlobServiceClient.fromConnectionString(config.connectionString, pipeline);
  const url = `https://${config.accountName}.blob.core.windows.net`;
  return new BlobServiceClient(url, gate.credentialFor('storage', url), pipeline);
}

export function createQueueService(config: StorageConfig, gate: CredentialGate, options: { maxTries?: number } = {}): QueueServiceClient {
  const pipeline = options.maxTries ? { retryOptions: { maxTries: options.maxTries } } : {};
  if (config.kind === 'connection-string') return QueueServiceClient.fromConnectionString(config.connectionString, pipeline);
  const url = `https://${config.accountName}.queue.core.windows.net`;
  return new QueueServiceClient(url, gate.credentialFor('storage', url), pipeline);
}

/**
 * A Blob service client of an account a user named: a Storage token (and only that) from the gate, which
 * refuses a URL that is not an https Azure Storage host; connections through `agent` (the outbound guard's,
 * which checks every address at connect), and no redirect followed. `agent` and `redirectOptions` are
 * options of the core pipeline the storage SDK passes through (it builds it from these options).
 */
export function userBlobService(accountUrl: string, gate: CredentialGate, agent: Agent, extra: Record<string, unknown> = {}): BlobServiceClient {
  const options = { agent, redirectOptions: { maxRetries: 0 }, retryOptions: { maxTries: 2 }, ...extra };
  return new BlobServiceClient(accountUrl, gate.credentialFor('storage', accountUrl), options);
}

/** A Blob container created on first use, once per process; later calls share the same promise. */
export function lazyContainer(container: ContainerClient): () => Promise<ContainerClient> {
  let ready: Promise<ContainerClient> | undefined;
  return () => (ready ??= container.createIfNotExists().then(() => container));
}
