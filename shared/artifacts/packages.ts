// Artifact packages: resources moved between instances as versioned ZIP files (`manifest.json` and one JSON
// file per resource) in the Private package store. Export writes a version from resources of this instance;
// upload and deploy (from the Public or Private store) add one made elsewhere; plan and apply make this
// instance match a version, with the source instance's object ids rewritten to this one's.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { Principal } from '../auth/principal.js';
import { badRequest, conflict, internalError, notFound, validationError } from '../errors.js';
import { NamePart, SemanticVersion } from '../plugins/manifest.js';
import { purgePackage, readFromStore, softDeletePackage } from '../plugins/package-lifecycle.js';
import type { PackageStores } from '../plugins/packages.js';
import { objectIdOf, partitionOf, resourceId } from '../providers/types/resource-type.js';
import { readResource } from '../providers/resources.js';
import { SECRET_SETTINGS } from '../providers/settings.js';
import { appConfigurations } from '../providers/types/catalog.js';
import type { Container, Doc, DocsOf } from '../store/types.js';
import { updateDocument } from '../store/update.js';
import { fileOf, MAX_RESOURCES, readContents, zip, type Manifest } from './package-archive.js';
import {
  applyPlan,
  changesOf,
  mapDefinitionStrings,
  parseObjectId,
  planChanges,
  portable,
  typeOf,
  type Change,
  type Incoming,
} from './resource-set.js';
import type { AgentTokens } from '../auth/agent-tokens.js';
import type { Authorizer } from '../auth/authorizer.js';
import type { GraphOptions } from '../auth/graph.js';
import type { Config } from '../config.js';
import type { Pager } from '../http/paging.js';
import type { ExtractionPool } from '../knowledge/extract-pool.js';
import type { VectorIndex } from '../knowledge/vector-index.js';
import type { Log } from '../log.js';
import type { ModelGateway } from '../models/gateway.js';
import type { CredentialGate } from '../net/credential-gate.js';
import type { Dispatcher } from '../net/undici.js';
import type { PluginPackages } from '../plugins/packages.js';
import type { PluginRuntime } from '../plugins/runtime.js';
import type { ResourceCache } from '../providers/resource-cache.js';
import type { AppSettings } from '../providers/settings.js';
import type { Producer } from '../queues/producer.js';
import type { BlobService } from '../store/storage.js';
import type { DocumentStore } from '../store/types.js';

/** What this module uses of the service (the hosts pass the whole of it). */
export interface ArtifactsPackagesDeps {
  readonly agentTokens: AgentTokens;
  readonly authorizer: Authorizer;
  readonly blobs: BlobService;
  readonly config: Config;
  readonly extraction: ExtractionPool;
  readonly gate: CredentialGate;
  readonly graph: GraphOptions | undefined;
  readonly log: Log;
  readonly models: ModelGateway;
  readonly packages: PluginPackages;
  readonly pager: Pager;
  readonly plugins: PluginRuntime;
  readonly producer: Producer;
  readonly resourceCache: ResourceCache;
  readonly settings: AppSettings;
  readonly store: DocumentStore;
  readonly userDispatcher: Dispatcher;
  readonly vectors: VectorIndex;
}

export const ARTIFACTS_PK = 'Svc.Platform/artifactPackages';

/** The `resource` of an upload, or the body of a deploy from a store (with package_store_type). */
export const ArtifactResource = z
  .object({
    type: z.literal('artifact-package', { error: 'type must be artifact-package' }),
    name: NamePart,
    package_version: SemanticVersion,
    package_store_type: z
      .enum(['Public', 'Private'], { error: 'package_store_type must be Public or Private' })
      .optional(),
  })
  .strict();
export type ArtifactResource = z.output<typeof ArtifactResource>;

export const ExportBody = z
  .object({
    package_version: SemanticVersion,
    resource_object_ids: z.array(z.string()).min(1, 'name at least one resource').max(MAX_RESOURCES),
    description: z.string().max(1000).optional(),
  })
  .strict();

interface ArtifactVersion {
  package_version: string;
  blob_name: string;
  size: number;
  sha256: string;
  source: 'Export' | 'Upload' | 'Public' | 'Private';
  uploaded_on: string;
  uploaded_by: string;
  source_instance: string;
  resources: { object_id: string; type: string }[];
}

export interface ArtifactPackageDoc extends Doc {
  type: 'artifact-package';
  name: string;
  object_id: string;
  description: string;
  current_version: string;
  versions: ArtifactVersion[];
  created_on: string;
  updated_on: string;
  updated_by: string;
  deleted: boolean;
}

declare module '../store/types.js' {
  interface StoredDocs {
    'resources/artifact-package': ArtifactPackageDoc;
  }
}

/** Whether a document of the resources container is an artifact package's record. */
export const isArtifactPackage = (doc: DocsOf<'resources'>): doc is ArtifactPackageDoc =>
  'type' in doc && doc.type === 'artifact-package';

/** Where a version lives in a package store; a folder of its own beside the plugin packages. */
const blobName = (name: string, version: string) => `artifacts/${name}/${version}/${name}.zip`;

/** Where the packages' records and files live, and the largest file a version may be. */
export interface ArtifactPackagesOptions {
  docs: Container<ArtifactPackageDoc>;
  stores: PackageStores;
  instanceId: string;
  maxBytes: number;
}

/** How a version comes in: its bytes, what the request says it is, who adds it and from where. */
interface AddedVersion {
  bytes: Buffer;
  resource: ArtifactResource;
  principal: Principal;
  source: ArtifactVersion['source'];
}

/** A version of a package, by name; the current one when no version is given. */
interface VersionRef {
  name: string;
  version?: string | undefined;
}

export class ArtifactPackages {
  private readonly docs: Container<ArtifactPackageDoc>;
  private readonly stores: PackageStores;
  private readonly instanceId: string;
  private readonly maxBytes: number;

  constructor({ docs, stores, instanceId, maxBytes }: ArtifactPackagesOptions) {
    this.docs = docs;
    this.stores = stores;
    this.instanceId = instanceId;
    this.maxBytes = maxBytes;
  }

  objectId(name: string) {
    return `/instances/${this.instanceId}/providers/${ARTIFACTS_PK}/${name}`;
  }

  /** Writes the resources named, as they are now, as a new version of the package. */
  async export(
    s: ArtifactsPackagesDeps,
    principal: Principal,
    { name, body }: { name: string; body: z.output<typeof ExportBody> },
  ): Promise<ArtifactPackageDoc> {
    const entries: { name: string; data: string }[] = [];
    const listed: Manifest['resources'] = [];
    for (const [i, objectId] of body.resource_object_ids.entries()) {
      const named = parseObjectId(objectId, this.instanceId);
      const field = `resource_object_ids[${i}]`;
      if (!named)
        throw validationError([
          { field, message: `${objectId} is not a resource of this instance that can be exported` },
        ]);
      await s.authorizer.require(principal, `${partitionOf(named.type)}/read`, objectId);
      const doc = await readResource(s, named.type, named.name);
      if (!doc || doc.deleted) throw validationError([{ field, message: `${objectId} not found` }]);
      // Secrets never leave the instance; what names a secret (…_secret_name) travels as the name.
      if (doc.type === appConfigurations.type && SECRET_SETTINGS.has(doc.name.toLowerCase())) {
        throw validationError([
          { field, message: `${objectId} is a secret setting: secrets are never exported; set it on each instance` },
        ]);
      }
      if (listed.some((e) => e.object_id === doc.object_id)) continue;
      listed.push({ object_id: doc.object_id, type: doc.type, file: fileOf(doc) });
      const definition = { type: doc.type, ...portable(named.type, doc) };
      entries.push({ name: fileOf(doc), data: `${JSON.stringify(definition, null, 2)}\n` });
    }
    const manifest: Manifest = {
      type: 'artifact-package',
      name,
      version: body.package_version,
      description: body.description ?? '',
      source_instance: this.instanceId,
      exported_on: new Date().toISOString(),
      exported_by: principal.upn,
      resources: listed,
    };
    const bytes = await zip([{ name: 'manifest.json', data: `${JSON.stringify(manifest, null, 2)}\n` }, ...entries]);
    return this.addVersion({
      bytes,
      resource: { type: 'artifact-package', name, package_version: body.package_version },
      principal,
      source: 'Export',
    });
  }

  /**
   * Stores a checked version and makes it current. The same bytes again are accepted as they are (a
   * pipeline may upload before every plan); other bytes under an existing version are 409.
   */
  async addVersion({ bytes, resource, principal, source }: AddedVersion): Promise<ArtifactPackageDoc> {
    if (bytes.length > this.maxBytes) throw badRequest(`The package is larger than ${this.maxBytes} bytes`);
    const { manifest, resources } = await readContents(bytes);
    if (manifest.name !== resource.name)
      throw badRequest(`name: the request names ${resource.name} but the package declares ${manifest.name}`);
    if (manifest.version !== resource.package_version)
      throw badRequest(
        `package_version: the request says ${resource.package_version} but the package declares ${manifest.version}`,
      );
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    const same = (current: ArtifactPackageDoc | undefined) => {
      if (current?.deleted) throw conflict(`${resource.name} is deleted; purge it before adding versions again`);
      if (current && current.name !== resource.name)
        throw conflict(`${current.name} exists; package names differ only by case`);
      const existing = current?.versions.find((v) => v.package_version === resource.package_version);
      if (existing && existing.sha256 !== sha256)
        throw conflict(
          `Version ${resource.package_version} of ${resource.name} exists with other contents; versions are immutable`,
        );
      return existing !== undefined;
    };
    const before = await this.docs.read(ARTIFACTS_PK, resourceId(resource.name));
    if (before && same(before)) return before;
    const store = await this.stores.private.created();
    const blob = store.getBlockBlobClient(blobName(resource.name, resource.package_version));
    await blob.uploadData(bytes, { blobHTTPHeaders: { blobContentType: 'application/zip' } });
    const now = new Date().toISOString();
    const version: ArtifactVersion = {
      package_version: resource.package_version,
      blob_name: blob.name,
      size: bytes.length,
      sha256,
      source,
      uploaded_on: now,
      uploaded_by: principal.upn,
      source_instance: manifest.source_instance ?? '',
      resources: resources.map(({ entry, definition }) => ({
        object_id: entry.object_id ?? '',
        type: definition.type,
      })),
    };
    const saved = await updateDocument(this.docs, { pk: ARTIFACTS_PK, id: resourceId(resource.name) }, (current) => {
      if (same(current)) return undefined;
      return {
        id: resourceId(resource.name),
        pk: ARTIFACTS_PK,
        type: 'artifact-package' as const,
        name: resource.name,
        object_id: this.objectId(resource.name),
        description: manifest.description || current?.description || '',
        current_version: version.package_version,
        versions: [...(current?.versions ?? []), version],
        created_on: current?.created_on ?? now,
        updated_on: now,
        updated_by: principal.upn,
        deleted: false,
      };
    });
    if (!saved) throw internalError('InternalError', 'The package was not saved');
    return saved;
  }

  /** Adds a version from a package store: `{name}/{version}/{name}.zip` there. */
  async deploy(resource: ArtifactResource, principal: Principal): Promise<ArtifactPackageDoc> {
    const storeType = resource.package_store_type ?? 'Private';
    const blob = blobName(resource.name, resource.package_version);
    const bytes = await readFromStore(this.stores, { storeType, path: blob, maxBytes: this.maxBytes });
    return this.addVersion({ bytes, resource, principal, source: storeType });
  }

  async list(): Promise<ArtifactPackageDoc[]> {
    return (
      await this.docs.query({
        partition: ARTIFACTS_PK,
        where: [{ field: 'deleted', op: 'ne', value: true }],
        orderBy: [{ field: 'name' }],
      })
    ).items;
  }

  async get(name: string): Promise<ArtifactPackageDoc> {
    const doc = await this.docs.read(ARTIFACTS_PK, resourceId(name));
    if (!doc || doc.deleted) throw notFound(`Artifact package ${name} not found`);
    return doc;
  }

  /** The bytes of a version (the current one by default) as stored. */
  async download({ name, version }: VersionRef): Promise<{ bytes: Buffer; version: ArtifactVersion }> {
    const doc = await this.get(name);
    const v = doc.versions.find((x) => x.package_version === (version ?? doc.current_version));
    if (!v) throw notFound(`Version ${version ?? ''} of ${name} not found`);
    const bytes = await (await this.stores.private.blob(v.blob_name)).downloadToBuffer();
    if (createHash('sha256').update(bytes).digest('hex') !== v.sha256)
      throw conflict(`Version ${v.package_version} of ${name} was changed in the store since it was added`);
    return { bytes, version: v };
  }

  /**
   * A version's ZIP for a principal: it holds the definitions of every resource in it, so reading it needs
   * what changing them would, `write` on each as it would land on this instance (403 otherwise).
   */
  async downloadFor(
    s: ArtifactsPackagesDeps,
    principal: Principal,
    ref: VersionRef,
  ): Promise<{ bytes: Buffer; version: ArtifactVersion }> {
    const found = await this.download(ref);
    for (const { definition } of (await readContents(found.bytes)).resources) {
      const type = typeOf(definition.type);
      if (type)
        await s.authorizer.require(
          principal,
          `${partitionOf(type)}/write`,
          objectIdOf(this.instanceId, type, definition.name),
        );
    }
    return found;
  }

  /** What applying a version would change; nothing is written. */
  async plan(s: ArtifactsPackagesDeps, principal: Principal, ref: Required<VersionRef>): Promise<Change[]> {
    return changesOf(await planChanges(s, principal, await this.incoming(ref)));
  }

  /** Makes this instance match a version: checked whole first, then written in dependency order. */
  async apply(s: ArtifactsPackagesDeps, principal: Principal, ref: Required<VersionRef>): Promise<Change[]> {
    return applyPlan(s, principal, await planChanges(s, principal, await this.incoming(ref)));
  }

  /**
   * A version's resources as definitions for this instance: every object id a definition names, of
   * whichever instance, is rewritten to this one (a package holds its resources and what they name).
   */
  private async incoming(ref: Required<VersionRef>): Promise<Incoming[]> {
    const { resources } = await readContents((await this.download(ref)).bytes);
    const to = `/instances/${this.instanceId}/providers/`;
    return resources.map(({ entry, definition }) => {
      const type = typeOf(definition.type);
      if (!type)
        throw badRequest(
          `Invalid package: ${entry.file} is a ${definition.type}, not a resource type that can be applied`,
        );
      const { type: _t, ...rest } = mapDefinitionStrings(definition, (v) =>
        v.replace(/^\/instances\/[^/]+\/providers\//, to),
      );
      return { type, definition: rest };
    });
  }

  delete(name: string, principal: Principal): Promise<ArtifactPackageDoc> {
    return softDeletePackage(this.docs, { pk: ARTIFACTS_PK, name, what: 'Artifact package' }, principal);
  }

  purge(name: string): Promise<ArtifactPackageDoc> {
    return purgePackage(this.docs, { pk: ARTIFACTS_PK, name, what: 'Artifact package' }, this.stores.private);
  }
}
