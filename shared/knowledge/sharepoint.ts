// SharePoint Online sources through Microsoft Graph, with the service's managed identity: the site named by
// `site_url`, the drives of its `document_libraries`, and their files through delta queries. A pipeline's
// first run (and any run after its settings changed or Graph asked for a resync) lists every file; later
// runs read only what changed since the delta link the last completed run kept, and remove the files Graph
// reports deleted. Each file's permissions become the groups that may read it: Entra groups it is shared
// with; a sharing link for the organisation or anyone, or permissions only inherited from the site, leave it
// for everyone who may use the agent; a file shared only with people (no group, no link) is for no one,
// since knowledge is trimmed by groups. A document's source is the file's web URL with its item id as the
// fragment, so a deletion (which Graph reports by id) finds it. Graph's own next and delta links are the
// only ones followed: a link elsewhere would carry the token away.
import { request } from '../net/undici.js';
import type { GraphOptions } from '../auth/graph.js';
import { DocumentError, MAX_DOCUMENT_BYTES, readCapped, type SourceDocument } from './sources.js';
import type { Dispatcher } from '../net/undici.js';

/** What this module uses of the service (the hosts pass the whole of it). */
export interface SharepointDeps {
  readonly userDispatcher: Dispatcher;
}

export interface SharePointSettings {
  site_url: string;
  document_libraries: string[];
}

/** A run's position in each library's changes: Graph's delta link per drive id. */
export type DeltaCursors = Record<string, string>;

export interface SharePointListing {
  /** Files to read: every file, or those changed since the cursors. */
  documents: SourceDocument[];
  /** Sources Graph reported deleted (incremental listings only). */
  removed: string[];
  /** True when every file was listed: indexed documents not listed are gone. */
  complete: boolean;
  cursors: DeltaCursors;
}

interface DriveItem {
  id: string;
  name?: string;
  webUrl?: string;
  size?: number;
  file?: object;
  deleted?: object;
  parentReference?: { path?: string };
  '@microsoft.graph.downloadUrl'?: string;
}

interface Permission {
  link?: { scope?: string };
  grantedToV2?: { group?: { id?: string }; user?: { id?: string } };
  grantedToIdentitiesV2?: { group?: { id?: string }; user?: { id?: string } }[];
}

/**
 * Most pages of one library's listing (200 items each by default): a library past that is refused, not read forever.
 */
const MAX_PAGES = 5_000;

/** The fragment that carries a file's item id in its document source. */
const itemFragment = (id: string) => `#item=${encodeURIComponent(id)}`;

class Graph {
  constructor(
    private readonly options: GraphOptions,
    private readonly signal: AbortSignal | undefined,
  ) {}

  /** GETs a Graph URL (one of Graph's own); answers the status and body. */
  async get<T>(url: string): Promise<{ status: number; body: T | undefined }> {
    if (!url.startsWith(`${this.options.baseUrl}/`))
      throw new DocumentError('Microsoft Graph gave a link outside Graph; it is not followed');
    const res = await (this.options.fetch ?? fetch)(url, {
      headers: { authorization: `Bearer ${await this.options.getToken()}`, accept: 'application/json' },
      signal: this.signal ? AbortSignal.any([this.signal, AbortSignal.timeout(30_000)]) : AbortSignal.timeout(30_000),
    });
    if (!res.ok) {
      await res.body?.cancel();
      return { status: res.status, body: undefined };
    }
    return { status: res.status, body: (await res.json()) as T };
  }

  async must<T>(url: string, what: string): Promise<T> {
    const { status, body } = await this.get<T>(url);
    if (body === undefined) throw new DocumentError(`Microsoft Graph answered ${status} for ${what}`);
    return body;
  }
}

/** What a listing reads: the site and libraries, the path prefixes kept, and where the last run left off. */
export interface SharePointRequest {
  graph: GraphOptions | undefined;
  settings: SharePointSettings;
  paths: readonly string[];
  cursors: DeltaCursors | undefined;
  signal?: AbortSignal;
}

/** The files of the libraries (all, or changed since the cursors), with the groups that may read each. */
export async function sharePointDocuments(
  s: SharepointDeps,
  { graph: graphOptions, settings, paths, cursors, signal }: SharePointRequest,
): Promise<SharePointListing> {
  if (!graphOptions)
    throw new DocumentError(
      'SharePoint Online sources are read through Microsoft Graph: set GRAPH_ENABLED=true and grant the ' +
        'identity Sites.Read.All',
    );
  const graph = new Graph(graphOptions, signal);
  const base = `${graphOptions.baseUrl}/v1.0`;
  let site: URL;
  try {
    site = new URL(settings.site_url);
  } catch {
    throw new DocumentError('site_url is not a URL');
  }
  const sitePath = site.pathname.replace(/\/+$/, '');
  const siteRef = sitePath ? `:${sitePath.split('/').map(encodeURIComponent).join('/')}` : '';
  const { id: siteId } = await graph.must<{ id: string }>(
    `${base}/sites/${encodeURIComponent(site.hostname)}${siteRef}?$select=id`,
    'the site',
  );
  const { value: drives } = await graph.must<{ value: { id: string; name: string }[] }>(
    `${base}/sites/${encodeURIComponent(siteId)}/drives?$select=id,name`,
    "the site's libraries",
  );
  const wanted = new Map(settings.document_libraries.map((l) => [l.toLowerCase(), l]));
  const chosen = drives.filter((d) => wanted.has(d.name.toLowerCase()));
  const missing = [...wanted.values()].filter((l) => !chosen.some((d) => d.name.toLowerCase() === l.toLowerCase()));
  if (missing.length > 0) throw new DocumentError(`the site has no document library named ${missing.join(', ')}`);

  const documents: SourceDocument[] = [];
  const removed: string[] = [];
  const next: DeltaCursors = {};
  let complete = true;
  for (const drive of chosen) {
    const known = cursors?.[drive.id];
    let url = known ?? `${base}/drives/${encodeURIComponent(drive.id)}/root/delta`;
    let incremental = known !== undefined;
    const items: DriveItem[] = [];
    for (let page = 0; ; page++) {
      if (page >= MAX_PAGES)
        throw new DocumentError(`the library ${drive.name} has more than ${MAX_PAGES} pages of changes`);
      const { status, body } = await graph.get<{
        value?: DriveItem[];
        '@odata.nextLink'?: string;
        '@odata.deltaLink'?: string;
      }>(url);
      // A delta link Graph no longer honours: the library is listed again in full.
      if (status === 410 && incremental) {
        url = `${base}/drives/${encodeURIComponent(drive.id)}/root/delta`;
        incremental = false;
        items.length = 0;
        continue;
      }
      if (!body) throw new DocumentError(`Microsoft Graph answered ${status} for the changes of ${drive.name}`);
      items.push(...(body.value ?? []));
      if (body['@odata.nextLink']) url = body['@odata.nextLink'];
      else {
        if (body['@odata.deltaLink']) next[drive.id] = body['@odata.deltaLink'];
        break;
      }
    }
    if (incremental) complete = false;
    for (const item of items) {
      if (item.deleted) {
        removed.push(itemFragment(item.id));
        continue;
      }
      if (!item.file || !item.name || !item.webUrl) continue;
      const folder = (item.parentReference?.path ?? '').replace(/^.*?root:\/?/, '');
      const relative = `${drive.name}/${folder ? `${decodeURIComponent(folder)}/` : ''}${item.name}`;
      if (paths.length > 0 && !paths.some((p) => relative.startsWith(p))) continue;
      documents.push(await fileDocument(s, graph, { base, driveId: drive.id, item }));
    }
  }
  return { documents, removed, complete, cursors: next };
}

/** A file as a document: its groups read now, its bytes when the run reads it. */
async function fileDocument(
  s: SharepointDeps,
  graph: Graph,
  { base, driveId, item }: { base: string; driveId: string; item: DriveItem },
): Promise<SourceDocument> {
  const { value: permissions } = await graph.must<{ value: Permission[] }>(
    `${base}/drives/${encodeURIComponent(driveId)}/items/${encodeURIComponent(item.id)}/permissions`,
    `the permissions of ${item.name ?? item.id}`,
  );
  const groups = readersOf(permissions);
  const source = `${item.webUrl ?? ''}${itemFragment(item.id)}`;
  return {
    source,
    file_name: item.name ?? item.id,
    ...(groups ? { allowed_groups: groups } : {}),
    async read(signal) {
      if ((item.size ?? 0) > MAX_DOCUMENT_BYTES)
        throw new DocumentError(`the document is larger than ${MAX_DOCUMENT_BYTES} bytes`);
      const download = item['@microsoft.graph.downloadUrl'];
      if (!download) throw new DocumentError('Microsoft Graph gave no download URL for the file');
      // A pre-authenticated URL: fetched without the Graph token, through the outbound rules for user URLs.
      const { statusCode, body, headers } = await request(download, {
        dispatcher: s.userDispatcher,
        headersTimeout: 15_000,
        bodyTimeout: 30_000,
        signal,
      });
      if (statusCode === 404) {
        await body.dump();
        return 'gone';
      }
      if (statusCode < 200 || statusCode >= 300) {
        await body.dump();
        throw new DocumentError(`the file's download answered ${statusCode}`);
      }
      return readCapped(body, headers);
    },
  };
}

/**
 * Who may read a file by its permissions: undefined for everyone (an organisation or anonymous link, or
 * nothing but the site's own permissions), else the Entra groups it is shared with, and when it is shared
 * only with people, a group no one has.
 */
export function readersOf(permissions: readonly Permission[]): string[] | undefined {
  if (permissions.some((p) => p.link?.scope === 'organization' || p.link?.scope === 'anonymous')) return undefined;
  const grants = permissions
    .flatMap((p) => [p.grantedToV2, ...(p.grantedToIdentitiesV2 ?? [])])
    .filter((g) => g !== undefined);
  const groups = [
    ...new Set(grants.map((g) => g.group?.id).filter((id): id is string => typeof id === 'string' && id !== '')),
  ];
  if (groups.length > 0) return groups;
  return grants.some((g) => g.user?.id) ? [NO_ONE] : undefined;
}

/** The group of a file shared only with people: no caller's groups contain it. */
export const NO_ONE = 'people-only';

/** The document sources an incremental listing's deletions name, among those indexed. */
export const deletedSources = (removed: readonly string[], indexed: Iterable<string>): string[] => {
  const fragments = new Set(removed);
  return [...indexed].filter((source) => {
    const at = source.lastIndexOf('#item=');
    return at >= 0 && fragments.has(source.slice(at));
  });
};
