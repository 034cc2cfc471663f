// Blob and queue clients: a connection string locally (Azurite), managed identity in Azure. A Storage
// token comes from the credential gate, bound to the account's URL; a client of a storage account that
// users name (a data source's account_url) also connects only to addresses the outbound rules allow.
//
// The Storage SDKs are about 2 MB of code, imported when a client is first used rather than when the service
// starts: most cold starts of a Function App never touch Blob storage (`npm run bench -- cold-start`).
import type { Agent } from 'node:https';
import type { BlobServiceClient, BlockBlobClient, ContainerClient } from '@azure/storage-blob';
import type { QueueServiceClient } from '@azure/storage-queue';
import type { CredentialGate } from '../net/credential-gate.js';
import type { StorageConfig } from '../config.js';
import { once } from '../once.js';

/** The Blob SDK, for the few callers that make a client of their own (a data source's connection string). */
export const blobSdk = once(() => import('@azure/storage-blob'));
const queueSdk = once(() => import('@azure/storage-queue'));

/** A Blob container whose client is made at first use. */
export class BlobContainer {
  /** The container's client. */
  readonly client: () => Promise<ContainerClient>;
  /** The client once the container exists: created on first use, once per process. */
  readonly created: () => Promise<ContainerClient>;

  constructor(make: () => Promise<ContainerClient>) {
    this.client = once(make);
    this.created = once(async () => {
      const container = await this.client();
      await container.createIfNotExists();
      return container;
    });
  }

  /** One blob's client. */
  async blob(name: string): Promise<BlockBlobClient> {
    return (await this.client()).getBlockBlobClient(name);
  }
}

/** A storage account's Blob service, whose client is made at first use. */
export class BlobService {
  readonly client: () => Promise<BlobServiceClient>;

  constructor(make: () => Promise<BlobServiceClient>) {
    this.client = once(make);
  }

  container(name: string): BlobContainer {
    return new BlobContainer(async () => (await this.client()).getContainerClient(name));
  }
}

/** A storage account's Queue service client, made at first use. */
export type QueueService = () => Promise<QueueServiceClient>;

/** A container by its URL (with a SAS when it is not public), read anonymously. */
export const containerAt = (url: string): BlobContainer =>
  new BlobContainer(async () => new (await blobSdk()).ContainerClient(url));

/** `maxTries` 1 for probes (readiness): an answer now, not after the SDK's retries. */
const pipelineOf = (options: { maxTries?: number }) =>
  options.maxTries ? { retryOptions: { maxTries: options.maxTries } } : {};

export function createBlobService(
  config: StorageConfig,
  gate: CredentialGate,
  options: { maxTries?: number } = {},
): BlobService {
  return new BlobService(async () => {
    const { BlobServiceClient } = await blobSdk();
    if (config.kind === 'connection-string')
      return BlobServiceClient.fromConnectionString(config.connectionString, pipelineOf(options));
    const url = `https://${config.accountName}.blob.core.windows.net`;
    return new BlobServiceClient(url, gate.credentialFor('storage', url), pipelineOf(options));
  });
}

export function createQueueService(
  config: StorageConfig,
  gate: CredentialGate,
  options: { maxTries?: number } = {},
): QueueService {
  return once(async () => {
    const { QueueServiceClient } = await queueSdk();
    if (config.kind === 'connection-string')
      return QueueServiceClient.fromConnectionString(config.connectionString, pipelineOf(options));
    const url = `https://${config.accountName}.queue.core.windows.net`;
    return new QueueServiceClient(url, gate.credentialFor('storage', url), pipelineOf(options));
  });
}

/**
 * A Blob service client of an account a user named: a Storage token (and only that) from the gate, which
 * refuses a URL that is not an https Azure Storage host; connections through `agent` (the outbound guard's,
 * which checks every address at connect), and no redirect followed. `agent` and `redirectOptions` are
 * options of the core pipeline the storage SDK passes through (it builds it from these options).
 */
export async function userBlobService(
  accountUrl: string,
  gate: CredentialGate,
  agent: Agent,
  extra: Record<string, unknown> = {},
): Promise<BlobServiceClient> {
  const options = { agent, redirectOptions: { maxRetries: 0 }, retryOptions: { maxTries: 2 }, ...extra };
  return new (await blobSdk()).BlobServiceClient(accountUrl, gate.credentialFor('storage', accountUrl), options);
}
