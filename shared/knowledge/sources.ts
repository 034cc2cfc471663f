// Where a pipeline's documents come from. AzureBlob: the blobs under each source path (a name
// prefix) of each of its containers, in the service's own storage or another Azure Storage account reached
// with the managed identity's Storage token (only that token, only to an https Azure Storage host, every
// address checked at connect) or with a connection string from an SVC_SECRET_ setting. AzureDataLake: the
// files under the source's paths in a file system, read through the Blob endpoint of the same account.
// Web: each source path is a document URL under one of the data source's allowed prefixes, fetched through
// the user-URL rules of 10.1 (no redirects, every address checked at connect); no crawling.
import type { Config } from '../config.js';
import type { BlobServiceClient, ContainerClient } from '@azure/storage-blob';
import { request, type Dispatcher } from '../net/undici.js';
import type { IncomingHttpHeaders } from 'node:http';
import { readSecret, SECRET_NAME, SECRET_NAME_RULE } from '../config.js';
import { guardedHttpAgent, guardedHttpsAgent } from '../net/outbound.js';
import type { DataSourceDoc } from '../providers/types/data-pipelines.js';
import { blobSdk, userBlobService } from '../store/storage.js';
import type { CredentialGate } from '../net/credential-gate.js';
import type { BlobService } from '../store/storage.js';

/** What this module uses of the service (the hosts pass the whole of it). */
export interface SourcesDeps {
  readonly blobs: BlobService;
  readonly config: Config;
  readonly gate: CredentialGate;
  readonly userDispatcher: Dispatcher;
}

/** Largest document read (bytes): a larger one is reported in the run's errors, not read into memory. */
export const MAX_DOCUMENT_BYTES = 32 * 1024 * 1024;

export class DocumentError extends Error {}

/** One document of a source, read on demand. */
export interface SourceDocument {
  source: string;
  file_name: string;
  /** Group object ids allowed to read it (AzureBlob: the blob's `svc_allowed_groups` metadata); absent: everyone. */
  allowed_groups?: readonly string[];
  /** The bytes and content type; `gone` when the document no longer exists (a Web 404 or 410). */
  read(signal: AbortSignal): Promise<{ bytes: Uint8Array; contentType?: string } | 'gone'>;
}

/** The source types the service can read; the others are definitions only for now. */
export const READABLE_SOURCE_TYPES = ['AzureBlob', 'AzureDataLake', 'SharePointOnline', 'Web'] as const;

export interface SourceSettings {
  data_source_type: string;
  /** AzureBlob: every container; AzureDataLake: the file system. */
  containers: string[];
  account_url?: string;
  connection_string_secret_name?: string;
  /** AzureDataLake: the directories read when a pipeline names no source paths. */
  paths?: string[];
  urls?: string[];
  site_url?: string;
  document_libraries?: string[];
}

/** The Blob endpoint of an account URL: a Data Lake (dfs) host is read through the Blob host of its account. */
export function blobUrlOf(accountUrl: string): string {
  try {
    const u = new URL(accountUrl);
    u.hostname = u.hostname.replace(/\.dfs\.core\.windows\.net$/i, '.blob.core.windows.net');
    return u.href.replace(/\/$/, '');
  } catch {
    return accountUrl;
  }
}

/** A directory as a name prefix: no leading slash, one trailing slash (so `reports` does not match `reports-old`). */
export const directoryPrefix = (path: string) => {
  const trimmed = path.replace(/^\/+|\/+$/g, '');
  return trimmed === '' ? '' : `${trimmed}/`;
};

/** The documents of the pipeline's source paths in the data source. */
export async function listDocuments(
  s: SourcesDeps,
  source: SourceSettings,
  paths: readonly string[],
): Promise<SourceDocument[]> {
  if (source.data_source_type === 'Web') return webDocuments(s, source.urls ?? [], paths);
  if (source.data_source_type === 'AzureBlob' || source.data_source_type === 'AzureDataLake') {
    const own = serviceContainerProblem(s.config, source);
    if (own) throw new DocumentError(own);
    const service = await blobServiceOf(s, source);
    const prefixes = paths.length > 0 ? paths : (source.paths ?? []).map(directoryPrefix);
    // With several containers a document's source names its container too.
    const named = source.containers.length > 1;
    const found = await Promise.all(
      source.containers.map((c) => blobDocuments(service.getContainerClient(c), prefixes, named ? `${c}/` : '')),
    );
    return found.flat();
  }
  throw new DocumentError(`${source.data_source_type} data sources cannot be processed yet`);
}

const fileNameOf = (source: string) => {
  const pathname = /^https?:/i.test(source) ? new URL(source).pathname : source;
  return decodeURIComponent(pathname.split('/').filter(Boolean).pop() ?? source);
};

/** Whether a URL is under an allowed prefix: same origin, and its path continues the prefix's. */
export function underPrefix(url: string, prefixes: readonly string[]): boolean {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return false;
  }
  return prefixes.some((p) => {
    const prefix = new URL(p);
    return (
      u.origin === prefix.origin && u.pathname.startsWith(prefix.pathname) && u.username === '' && u.password === ''
    );
  });
}

function webDocuments(s: SourcesDeps, prefixes: readonly string[], urls: readonly string[]): SourceDocument[] {
  return [...new Set(urls)].map((url) => ({
    source: url,
    file_name: fileNameOf(url),
    async read(signal) {
      if (!underPrefix(url, prefixes)) throw new DocumentError('the URL is not under any of the data source urls');
      let response;
      try {
        response = await request(url, {
          dispatcher: s.userDispatcher,
          headers: {
            'user-agent': 'agent-platform-pipelines',
            accept:
              'text/html, text/plain, text/markdown, application/pdf, ' +
              'application/vnd.openxmlformats-officedocument.wordprocessingml.document;q=0.9, */*;q=0.1',
          },
          headersTimeout: 15_000,
          bodyTimeout: 30_000,
          signal,
        });
      } catch (e) {
        if (signal.aborted) throw e;
        const blocked =
          propertyOf(e, 'code') === 'EBLOCKED' || propertyOf(propertyOf(e, 'cause'), 'code') === 'EBLOCKED';
        throw new DocumentError(blocked ? 'the URL is not an allowed destination' : 'the URL could not be reached');
      }
      const { statusCode, headers, body } = response;
      if (statusCode === 404 || statusCode === 410) {
        await body.dump();
        return 'gone';
      }
      if (statusCode < 200 || statusCode >= 300) {
        await body.dump();
        throw new DocumentError(
          statusCode >= 300 && statusCode < 400
            ? `the URL redirects (${statusCode}); redirects are not followed`
            : `the URL answered ${statusCode}`,
        );
      }
      return readCapped(body, headers);
    },
  }));
}

/** A property of a thrown value (an SDK's status code, a network error's code), when it has one. */
const propertyOf = (e: unknown, name: string): unknown =>
  typeof e === 'object' && e !== null ? Reflect.get(e, name) : undefined;

/** A downloaded document's bytes and content type, refused past MAX_DOCUMENT_BYTES (declared or counted). */
export async function readCapped(
  body: Dispatcher.ResponseData['body'],
  headers: IncomingHttpHeaders,
): Promise<{ bytes: Buffer; contentType?: string }> {
  if (Number(headers['content-length']) > MAX_DOCUMENT_BYTES) {
    await body.dump();
    throw new DocumentError(`the document is larger than ${MAX_DOCUMENT_BYTES} bytes`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += (chunk as Buffer).length;
    if (size > MAX_DOCUMENT_BYTES) {
      body.destroy();
      throw new DocumentError(`the document is larger than ${MAX_DOCUMENT_BYTES} bytes`);
    }
    chunks.push(chunk as Buffer);
  }
  const type = headers['content-type'];
  return { bytes: Buffer.concat(chunks), ...(typeof type === 'string' ? { contentType: type } : {}) };
}

/**
 * The Blob service the source reads: by its connection string, by account URL with the managed identity, or the
 * service's own.
 */
export async function blobServiceOf(s: SourcesDeps, source: SourceSettings): Promise<BlobServiceClient> {
  const agent = () => guardedHttpsAgent({ policy: 'user', allowPrivateNetwork: s.config.allowPrivateNetwork });
  if (source.connection_string_secret_name) {
    const name = source.connection_string_secret_name;
    if (!SECRET_NAME.test(name)) throw new DocumentError(`connection_string_secret_name ${name}: ${SECRET_NAME_RULE}`);
    const connection = readSecret(name);
    if (!connection) throw new DocumentError(`the connection string secret ${name} is not set`);
    const { BlobServiceClient } = await blobSdk();
    try {
      // The account a connection string names is reached through the same outbound guard as any user URL.
      const plain = new URL(BlobServiceClient.fromConnectionString(connection).url).protocol === 'http:';
      const guarded = plain
        ? guardedHttpAgent({ policy: 'user', allowPrivateNetwork: s.config.allowPrivateNetwork })
        : agent();
      return BlobServiceClient.fromConnectionString(connection, {
        agent: guarded,
        redirectOptions: { maxRetries: 0 },
        retryOptions: { maxTries: 2 },
      } as never);
    } catch {
      throw new DocumentError(
        `the connection string in ${source.connection_string_secret_name} is not a storage connection string`,
      );
    }
  }
  if (!source.account_url) return s.blobs.client();
  const url = blobUrlOf(source.account_url);
  const problem = s.gate.urlProblem('storage', url);
  if (problem) throw new DocumentError(`account_url ${problem}`);
  return userBlobService(url, s.gate, agent());
}

/** The metadata entry naming the groups that may read a blob: comma-separated group object ids. */
export const ALLOWED_GROUPS_METADATA = 'svc_allowed_groups';

/** The groups a blob's metadata allows (names are case-insensitive), or undefined for everyone. */
function allowedGroups(metadata: Record<string, string> | undefined): string[] | undefined {
  const value = Object.entries(metadata ?? {}).find(([k]) => k.toLowerCase() === ALLOWED_GROUPS_METADATA)?.[1];
  const groups = (value ?? '')
    .split(',')
    .map((g) => g.trim())
    .filter((g) => g !== '');
  return groups.length > 0 ? groups : undefined;
}

async function blobDocuments(
  container: ContainerClient,
  prefixes: readonly string[],
  sourcePrefix: string,
): Promise<SourceDocument[]> {
  const found = new Map<string, { size: number; groups: string[] | undefined }>();
  try {
    for (const prefix of prefixes.length > 0 ? prefixes : ['']) {
      for await (const blob of container.listBlobsFlat({ prefix, includeMetadata: true }))
        found.set(blob.name, { size: blob.properties.contentLength ?? 0, groups: allowedGroups(blob.metadata) });
    }
  } catch (e) {
    const status = propertyOf(e, 'statusCode');
    throw new DocumentError(
      status === 404
        ? `container ${container.containerName} does not exist`
        : `the container cannot be listed (${typeof status === 'number' ? status : 'unreachable'})`,
    );
  }
  return [...found].map(([name, { size, groups }]) => ({
    source: `${sourcePrefix}${name}`,
    file_name: fileNameOf(name),
    ...(groups ? { allowed_groups: groups } : {}),
    async read(signal) {
      if (size > MAX_DOCUMENT_BYTES) throw new DocumentError(`the document is larger than ${MAX_DOCUMENT_BYTES} bytes`);
      try {
        const bytes = await container
          .getBlobClient(name)
          .downloadToBuffer(undefined, undefined, { abortSignal: signal });
        return { bytes };
      } catch (e) {
        if (propertyOf(e, 'statusCode') === 404) return 'gone';
        throw e;
      }
    },
  }));
}

/** The data source's settings as a pipeline run reads them. */
export const sourceSettings = (doc: DataSourceDoc): SourceSettings => {
  const containers =
    doc.data_source_type === 'AzureDataLake'
      ? [doc.filesystem]
      : [doc.container, ...(doc.configuration.containers ?? [])];
  return {
    data_source_type: doc.data_source_type,
    containers: [...new Set(containers.filter((c): c is string => c !== undefined))],
    ...(doc.account_url !== undefined ? { account_url: doc.account_url } : {}),
    ...(doc.configuration.connection_string_secret_name !== undefined
      ? { connection_string_secret_name: doc.configuration.connection_string_secret_name }
      : {}),
    ...(doc.paths !== undefined ? { paths: doc.paths } : {}),
    ...(doc.urls !== undefined ? { urls: doc.urls } : {}),
    ...(doc.site_url !== undefined ? { site_url: doc.site_url } : {}),
    ...(doc.document_libraries !== undefined ? { document_libraries: doc.document_libraries } : {}),
  };
};

/**
 * Containers of the service's own storage that hold its own data, its host's and its deployment's: no source reads
 * them.
 */
const SERVICE_PREFIXES = ['azure-webjobs-', 'app-package-', '$'];

/**
 * Why a source over the service's own storage may not read one of its containers (users' files, plugin
 * packages, the Functions host's secrets), or undefined. A source with an account or a connection string of
 * its own reads another account.
 */
export function serviceContainerProblem(
  config: Pick<Config, 'filesContainer' | 'packages'>,
  source: Pick<SourceSettings, 'data_source_type' | 'containers' | 'account_url' | 'connection_string_secret_name'>,
): string | undefined {
  if (
    source.data_source_type !== 'AzureBlob' ||
    source.account_url !== undefined ||
    source.connection_string_secret_name !== undefined
  )
    return undefined;
  const own = new Set([config.filesContainer, config.packages.container, config.packages.privateStore]);
  const taken = source.containers.find((c) => own.has(c) || SERVICE_PREFIXES.some((p) => c.startsWith(p)));
  return taken === undefined
    ? undefined
    : `container ${taken} holds the service's own data: a data source over the service's storage reads other ` +
        `containers`;
}

/** Why the source cannot be processed as defined, or undefined. */
export function sourceProblem(source: SourceSettings): string | undefined {
  if (source.data_source_type === 'AzureBlob' && source.containers.length === 0)
    return 'an AzureBlob data source needs a container';
  if (source.data_source_type === 'AzureDataLake') {
    if (source.containers.length === 0) return 'an AzureDataLake data source needs a filesystem';
    if (!source.account_url && !source.connection_string_secret_name)
      return 'an AzureDataLake data source needs an account_url or a connection_string_secret_name';
  }
  if (source.data_source_type === 'Web' && !source.urls?.length)
    return 'a Web data source needs urls, the prefixes documents may come from';
  if (source.data_source_type === 'SharePointOnline' && (!source.site_url || !source.document_libraries?.length))
    return 'a SharePointOnline data source needs a site_url and document_libraries';
  return undefined;
}
