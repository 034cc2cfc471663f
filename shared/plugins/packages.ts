// Plugin packages: upload or deploy versions from a store, keep every version
// downloadable, and list the plugins of each package's current version.
import { createHash, randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { Principal } from '../auth/principal.js';
import { DomainError, badRequest, internalError, conflict, notFound, statusCodeOf } from '../errors.js';
import { parseJsonText } from '../http/json-body.js';
import type { Container, Doc, DocsOf } from '../store/types.js';
import { resourceId } from '../providers/types/resource-type.js';
import { containerAt, type BlobContainer, type BlobService } from '../store/storage.js';
import { updateDocument } from '../store/update.js';
import { readArchive } from './archive.js';
import { purgePackage, readFromStore, softDeletePackage } from './package-lifecycle.js';
import {
  Manifest,
  moduleFiles,
  NamePart,
  SemanticVersion,
  packageName,
  pluginName,
  RUNTIMES,
  type Runtime,
} from './manifest.js';

import { builtinPlugins } from './builtin.js';

export const PACKAGES_PK = 'Svc.Platform/pluginPackages';

/** The `resource` of an upload, or the body of a deploy (with package_store_type). */
export const PackageResource = z
  .object({
    type: z.literal('plugin-package', { error: 'type must be plugin-package' }),
    name: NamePart,
    package_runtime: z.enum(RUNTIMES, { error: 'package_runtime must be Python or Dotnet' }),
    package_version: SemanticVersion,
    package_store_type: z
      .enum(['Public', 'Private'], { error: 'package_store_type must be Public or Private' })
      .optional(),
  })
  .strict();
export type PackageResource = z.output<typeof PackageResource>;

interface PackageVersion {
  package_version: string;
  blob_name: string;
  file_name: string;
  content_type: string;
  size: number;
  sha256: string;
  source: 'Upload' | 'Public' | 'Private';
  uploaded_on: string;
  uploaded_by: string;
  manifest: Manifest;
}

export interface PackageDoc extends Doc {
  type: 'plugin-package';
  name: string;
  object_id: string;
  package_runtime: Runtime;
  package_name: string;
  display_name: string;
  description: string;
  current_version: string;
  versions: PackageVersion[];
  created_on: string;
  updated_on: string;
  updated_by?: string;
  deleted: boolean;
}

declare module '../store/types.js' {
  interface StoredDocs {
    'resources/plugin-package': PackageDoc;
  }
}

/** Whether a document of the resources container is a plugin package's record. */
export const isPluginPackage = (doc: DocsOf<'resources'>): doc is PackageDoc =>
  'type' in doc && doc.type === 'plugin-package';

const extension = (runtime: Runtime) => (runtime === 'Python' ? 'zip' : 'nupkg');
const contentType = (runtime: Runtime) => (runtime === 'Python' ? 'application/zip' : 'application/octet-stream');

export interface PackageStores {
  /** The customer's own container. */
  private: BlobContainer;
  /** The vendor's read-only container, when configured. */
  public: BlobContainer | undefined;
}

export function packageStores(
  blobs: BlobService,
  privateContainer: string,
  publicUrl: string | undefined,
): PackageStores {
  return { private: blobs.container(privateContainer), public: publicUrl ? containerAt(publicUrl) : undefined };
}

/**
 * The package's name without its runtime (`acctools` for `Python-acctools`). The body names the package as
 * the path does, `{runtime}-{name}`; the first release's bare name is still accepted.
 */
function bareName(resource: PackageResource, pathName: string): string {
  const prefix = `${resource.package_runtime}-`;
  if (!pathName.startsWith(prefix))
    throw badRequest(`name: ${pathName} must start with ${prefix}, as package_runtime is ${resource.package_runtime}`);
  if (resource.name !== pathName && packageName(resource.package_runtime, resource.name) !== pathName) {
    throw badRequest(`name: must equal the package name in the path (${pathName})`);
  }
  return pathName.slice(prefix.length);
}

/** Where plugin packages live: their records, their files, the package stores to deploy from, and their limit. */
export interface PluginPackagesOptions {
  docs: Container<PackageDoc>;
  blobs: BlobContainer;
  stores: PackageStores;
  instanceId: string;
  maxBytes: number;
}

/** How a version comes in: its bytes, what the request says it is, the path's name, who adds it and from where. */
interface AddedVersion {
  bytes: Buffer;
  resource: PackageResource;
  pathName: string;
  principal: Principal;
  source: PackageVersion['source'];
}

export class PluginPackages {
  private readonly docs: Container<PackageDoc>;
  private readonly blobs: BlobContainer;
  private readonly stores: PackageStores;
  private readonly instanceId: string;
  readonly maxBytes: number;

  constructor({ docs, blobs, stores, instanceId, maxBytes }: PluginPackagesOptions) {
    this.docs = docs;
    this.blobs = blobs;
    this.stores = stores;
    this.instanceId = instanceId;
    this.maxBytes = maxBytes;
  }

  objectId(name: string) {
    return `/instances/${this.instanceId}/providers/Svc.Platform/pluginPackages/${name}`;
  }

  /** Checks an archive against the request and returns its manifest; nothing is stored for a bad one. */
  async inspect(bytes: Buffer, resource: PackageResource, pathName: string): Promise<Manifest> {
    const bare = bareName(resource, pathName);
    const contents = await readArchive(bytes, (n) => n === 'manifest.json');
    const text = contents.files.get('manifest.json')?.toString('utf8');
    if (text === undefined) throw badRequest('Invalid package archive: manifest.json is missing at its root');
    if (resource.package_runtime === 'Dotnet' && !contents.names.some((n) => n.endsWith('.deps.json'))) {
      throw badRequest('Invalid package archive: a Dotnet package needs its *.deps.json dependencies file');
    }
    let parsed: unknown;
    try {
      parsed = parseJsonText(text, 'manifest.json');
    } catch (e) {
      throw badRequest(
        `Invalid package archive: ${e instanceof DomainError ? e.message : 'manifest.json is not valid JSON'}`,
      );
    }
    const manifest = Manifest.safeParse(parsed);
    if (!manifest.success) {
      throw badRequest(
        `Invalid manifest: ${manifest.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
      );
    }
    const m = manifest.data;
    for (const [i, plugin] of m.plugins.entries()) {
      if (plugin.entry_point === undefined) continue;
      if (m.runtime !== 'Python')
        throw badRequest(`Invalid manifest: plugins.${i}.entry_point: only Python plugins have an entry point`);
      if (!moduleFiles(plugin.entry_point).some((f) => contents.names.includes(f))) {
        throw badRequest(
          `Invalid manifest: plugins.${i}.entry_point: the package has no module file ` +
            moduleFiles(plugin.entry_point).join(' or '),
        );
      }
    }
    if (m.name !== bare && m.name !== pathName)
      throw badRequest(`name: the request names ${pathName} but the package declares ${m.name}`);
    if (m.runtime !== resource.package_runtime)
      throw badRequest(
        `package_runtime: the request says ${resource.package_runtime} but the package declares ${m.runtime}`,
      );
    if (m.version !== resource.package_version)
      throw badRequest(
        `package_version: the request says ${resource.package_version} but the package declares ${m.version}`,
      );
    return m;
  }

  /**
   * Stores a checked version and makes it current; an existing version is 409. The bytes go to a blob of
   * their own first and the record last: a failure in between removes the blob, so nothing half-stored
   * ever blocks the version.
   */
  async addVersion({ bytes, resource, pathName, principal, source }: AddedVersion): Promise<PackageDoc> {
    const manifest = await this.inspect(bytes, resource, pathName);
    const taken = (current: PackageDoc | undefined) => {
      if (current?.deleted) throw conflict(`${pathName} is deleted; purge it before adding versions again`);
      if (current && current.name !== pathName)
        throw conflict(`${current.name} exists; package names differ only by case`);
      if (current?.versions.some((v) => v.package_version === resource.package_version)) {
        throw conflict(`Version ${resource.package_version} of ${pathName} exists; versions are immutable`);
      }
    };
    taken(await this.docs.read(PACKAGES_PK, resourceId(pathName)));
    const container = await this.blobs.created();
    const fileName = `${pathName}.${extension(resource.package_runtime)}`;
    const blobName = `${pathName}/${resource.package_version}/${randomUUID()}/${fileName}`;
    const blob = container.getBlockBlobClient(blobName);
    await blob.uploadData(bytes, { blobHTTPHeaders: { blobContentType: contentType(resource.package_runtime) } });
    const now = new Date().toISOString();
    const version: PackageVersion = {
      package_version: resource.package_version,
      blob_name: blobName,
      file_name: fileName,
      content_type: contentType(resource.package_runtime),
      size: bytes.length,
      sha256: createHash('sha256').update(bytes).digest('hex'),
      source,
      uploaded_on: now,
      uploaded_by: principal.upn,
      manifest,
    };
    try {
      const saved = await updateDocument(this.docs, { pk: PACKAGES_PK, id: resourceId(pathName) }, (current) => {
        taken(current);
        return {
          id: resourceId(pathName),
          pk: PACKAGES_PK,
          type: 'plugin-package' as const,
          name: pathName,
          object_id: this.objectId(pathName),
          package_runtime: resource.package_runtime,
          package_name: bareName(resource, pathName),
          display_name: manifest.display_name || pathName,
          description: manifest.description,
          current_version: version.package_version,
          versions: [...(current?.versions ?? []), version],
          created_on: current?.created_on ?? now,
          updated_on: now,
          deleted: false,
        };
      });
      if (!saved) throw internalError('InternalError', 'The package was not saved');
      return saved;
    } catch (e) {
      await blob.deleteIfExists().catch(() => undefined);
      throw e;
    }
  }

  /** Deploys a version from a package store: `{packageName}/{version}/{packageName}.{zip|nupkg}` there. */
  async deploy(resource: PackageResource, pathName: string, principal: Principal): Promise<PackageDoc> {
    bareName(resource, pathName);
    const storeType = resource.package_store_type ?? 'Private';
    const path = `${pathName}/${resource.package_version}/${pathName}.${extension(resource.package_runtime)}`;
    const bytes = await readFromStore(this.stores, { storeType, path, maxBytes: this.maxBytes });
    return this.addVersion({ bytes, resource, pathName, principal, source: storeType });
  }

  async list(): Promise<PackageDoc[]> {
    return (
      await this.docs.query({
        partition: PACKAGES_PK,
        where: [{ field: 'deleted', op: 'ne', value: true }],
        orderBy: [{ field: 'name' }],
      })
    ).items;
  }

  async get(name: string): Promise<PackageDoc> {
    const doc = await this.docs.read(PACKAGES_PK, resourceId(name));
    if (!doc || doc.deleted) throw notFound(`Plugin package ${name} not found`);
    return doc;
  }

  /** Soft delete: the package and its plugins leave every list; its name stays taken until purged. */
  delete(name: string, principal: Principal): Promise<PackageDoc> {
    return softDeletePackage(this.docs, { pk: PACKAGES_PK, name, what: 'Plugin package' }, principal);
  }

  /** Removes a soft-deleted package for good, with the blobs of all its versions. */
  purge(name: string): Promise<PackageDoc> {
    return purgePackage(this.docs, { pk: PACKAGES_PK, name, what: 'Plugin package' }, this.blobs);
  }

  /** The bytes of a version (the current one by default) exactly as uploaded. */
  async download(name: string, version?: string): Promise<{ bytes: Buffer; version: PackageVersion }> {
    const doc = await this.get(name);
    const v = doc.versions.find((x) => x.package_version === (version ?? doc.current_version));
    if (!v) throw notFound(`Version ${version ?? ''} of ${name} not found`);
    return { bytes: await (await this.blobs.blob(v.blob_name)).downloadToBuffer(), version: v };
  }

  /** The plugins of every package's current version, after the built-in ones (plugins/builtin.ts). */
  async plugins() {
    return [
      ...builtinPlugins(this.instanceId),
      ...(await this.list()).flatMap((p) => {
        const current = p.versions.find((v) => v.package_version === p.current_version);
        return (current?.manifest.plugins ?? []).map((plugin) => {
          const name = pluginName(p.package_runtime, p.package_name, plugin.name);
          return {
            type: 'plugin' as const,
            name,
            object_id: `/instances/${this.instanceId}/providers/Svc.Platform/plugins/${name}`,
            display_name: plugin.display_name || name,
            description: plugin.description,
            category: plugin.category,
            plugin_package_object_id: p.object_id,
            parameters: plugin.parameters,
            parameter_selection_hints: plugin.parameter_selection_hints,
            dependencies: plugin.dependencies,
          };
        });
      }),
    ];
  }

  /** Whether a store is configured, reachable and readable, and what it holds. */
  async validateStore(type: 'Public' | 'Private') {
    const store = type === 'Public' ? this.stores.public : this.stores.private;
    if (!store)
      return {
        package_store_type: type,
        configured: false,
        reachable: false,
        readable: false,
        package_count: 0,
        packages: [],
        message: 'No Public package store is configured (PACKAGE_STORE_PUBLIC_URL)',
      };
    const container = await store.client();
    try {
      const names: string[] = [];
      for await (const blob of container.listBlobsFlat()) {
        names.push(blob.name);
        if (names.length >= 1000) break;
      }
      return {
        package_store_type: type,
        configured: true,
        reachable: true,
        readable: true,
        container: container.containerName,
        package_count: names.length,
        packages: names.slice(0, 100),
        message: 'The store is reachable and readable',
      };
    } catch (e) {
      const status = statusCodeOf(e);
      return {
        package_store_type: type,
        configured: true,
        reachable: status !== undefined,
        readable: false,
        container: container.containerName,
        package_count: 0,
        packages: [],
        message:
          status === 404
            ? 'The store container does not exist'
            : status !== undefined
              ? `The store answered ${status}`
              : `The store could not be reached: ${e instanceof Error ? e.message : String(e)}`,
      };
    }
  }
}
