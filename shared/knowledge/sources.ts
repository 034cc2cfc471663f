// Where a pipeline's documents come from. AzureBlob: the blobs under each source path (a name
// prefix) of a container, in the service's own storage or another Azure Storage account reached with the
// managed identity's Storage token (only that token, only to an https Azure Storage host, every address
// checked at connect).
// Web: each source path is a document URL under one of the data source's allowed prefixes, fetched through
// the user-URL rules of 10.1 (no redirects, every address checked at connect); no crawling.
import type { ContainerClient } from '@azure/storage-blob';
import { request } from 'undici';
import { guardedHttpsAgent } from '../net/outbound.js';
import type { DataSourceDoc } from '../providers/types/catalog.js';
import type { Services } from '../services.js';
import { userBlobService } from '../store/storage.js';

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
export const READABLE_SOURCE_TYPES = ['AzureBlob', 'Web'] as const;

export interface SourceSettings {
  data_source_type: string;
  container?: string;
  account_url?: string;
  urls?: string[];
}

/** The documents of the pipeline's source paths in the data source. */
export async function listDocuments(s: Services, source: SourceSettings, paths: readonly string[]): Promise<SourceDocument[]> {
  if (source.data_source_type === 'Web') return webDocuments(s, source.urls ?? [], paths);
  if (source.data_source_type === 'AzureBlob') return blobDocuments(containerOf(s, source), paths);
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
    return u.origin === prefix.origin && u.pathname.startsWith(prefix.pathname) && u.username === '' && u.password === '';
  });
}

function webDocuments(s: Services, prefixes: readonly string[], urls: readonly string[]): SourceDocument[] {
  return [...new Set(urls)].map((url) => ({
    source: url,
    file_name: fileNameOf(url),
    async read(signal) {
      if (!underPrefix(url, prefixes)) throw new DocumentError('the URL is not under any of the data source urls');
      let response;
      try {
        response = await request(url, {
          dispatcher: s.userDispatcher,
          headers: { 'user-agent': 'agent-platform-pipelines', accept: 'text/html, text/plain, text/markdown, application/pdf, application/vnd.openxmlformats-officedocument.wordprocessingml.document;q=0.9, */*;q=0.1' },
          headersTimeout: 15_000,
          bodyTimeout: 30_000,
          signal,
        });
      } catch (e) {
        if (signal.aborted) throw e;
        const blocked = (e as { code?: string; cause?: { code?: string } }).code === 'EBLOCKED' || (e as { cause?: { code?: string } }).cause?.code === 'EBLOCKED';
        throw new DocumentError(blocked ? 'the URL is not an allowed destination' : 'the URL could not be reached');
      }
      const { statusCode, headers, body } = response;
      if (statusCode === 404 || statusCode === 410) {
        await body.dump();
        return 'gone';
      }
      if (statusCode < 200 || statusCode >= 300) {
        await body.dump();
        throw new DocumentError(statusCode >= 300 && statusCode < 400 ? `the URL redirects (${statusCode}); redirects are not followed` : `the URL answered ${statusCode}`);
      }
      const length = Number(headers['content-length']);
      if (length > MAX_DOCUMENT_BYTES) {
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
    },
  }));
}

function containerOf(s: Services, source: SourceSettings): ContainerClient {
  const name = source.container ?? '';
  if (!source.account_url) return s.blobs.getContainerClient(name);
  const problem = s.gate.urlProblem('storage', source.account_url);
  if (problem) throw new DocumentError(`account_url ${problem}`);
  const agent = guardedHttpsAgent({ policy: 'user', allowPrivateNetwork: s.config.allowPrivateNetwork });
  return userBlobService(source.account_url, s.gate, agent).getContainerClient(name);
}

/** The metadata entry naming the groups that may read a blob: comma-separated group object ids. */
export const ALLOWED_GROUPS_METADATA = 'svc_allowed_groups';

/** The groups a blob's metadata allows (names are case-insensitive), or undefined for everyone. */
function allowedGroups(metadata: Record<string, string> | undefined): string[] | undefined {
  const value = Object.entries(metadata ?? {}).find(([k]) => k.toLowerCase() === ALLOWED_GROUPS_METADATA)?.[1];
  const groups = (value ?? '').split(',').map((g) => g.trim()).filter((g) => g !== '');
  return groups.length > 0 ? groups : undefined;
}

async function blobDocuments(container: ContainerClient, prefixes: readonly string[]): Promise<SourceDocument[]> {
  const found = new Map<string, { size: number; groups: string[] | undefined }>();
  try {
    for (const prefix of prefixes.length > 0 ? prefixes : ['']) {
      for await (const blob of container.listBlobsFlat({ prefix, includeMetadata: true })) found.set(blob.name, { size: blob.properties.contentLength ?? 0, groups: allowedGroups(blob.metadata) });
    }
  } catch (e) {
    const status = (e as { statusCode?: number }).statusCode;
    throw new DocumentError(status === 404 ? `container ${container.containerName} does not exist` : `the container cannot be listed (${status ?? 'unreachable'})`);
  }
  return [...found].map(([name, { size, groups }]) => ({
    source: name,
    file_name: fileNameOf(name),
    ...(groups ? { allowed_groups: groups } : {}),
    async read(signal) {
      if (size > MAX_DOCUMENT_BYTES) throw new DocumentError(`the document is larger than ${MAX_DOCUMENT_BYTES} bytes`);
      try {
        const bytes = await container.getBlobClient(name).downloadToBuffer(undefined, undefined, { abortSignal: signal });
        return { bytes };
      } catch (e) {
        if ((e as { statusCode?: number }).statusCode === 404) return 'gone';
        throw e;
      }
    },
  }));
}

/** The data source's settings as a pipeline run reads them. */
export const sourceSettings = (doc: DataSourceDoc): SourceSettings => {
  const container = doc.container ?? doc.configuration.containers?.[0];
  return {
    data_source_type: doc.data_source_type,
    ...(container !== undefined ? { container } : {}),
    ...(doc.account_url !== undefined ? { account_url: doc.account_url } : {}),
    ...(doc.urls !== undefined ? { urls: doc.urls } : {}),
  };
};

/** Why the source cannot be processed as defined, or undefined. */
export function sourceProblem(source: SourceSettings): string | undefined {
  if (source.data_source_type === 'AzureBlob' && !source.container) return 'an AzureBlob data source needs a container';
  if (source.data_source_type === 'Web' && !source.urls?.length) return 'a Web data source needs urls, the prefixes documents may come from';
  return undefined;
}
