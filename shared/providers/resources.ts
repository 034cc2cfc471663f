// The generic resource provider: list, get, create-or-update, soft delete and purge for every resource type.
// The route's permission (functions/resources.ts) authorizes the action on the resource's path before these
// run; a list shows only what the caller may read; a type's rules may ask more (role assignments).
import type { Principal } from '../auth/principal.js';
import { conflict, notFound, badRequest } from '../errors.js';
import type { PageQuery, PageResult } from '../http/paging.js';
import type { Page } from '../store/types.js';
import { updateDocument } from '../store/update.js';
import type { HookContext, ResourceType } from './resource-rules.js';
import {
  type AnyResource,
  type DefinitionOf,
  objectIdOf,
  partitionOf,
  resourceId,
  type ResourceKind,
  resourcesIn,
  SERVICE_FIELDS,
} from './types/resource-type.js';
import {
  deletedConflict,
  dropVersions,
  listVersions,
  readVersion,
  RESOURCES_ONLY,
  writeVersioned,
  type VersionSummary,
} from './versions.js';
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
import type { ResourceCache } from './resource-cache.js';
import type { AppSettings } from './settings.js';
import type { Producer } from '../queues/producer.js';
import type { BlobService } from '../store/storage.js';
import type { DocumentStore } from '../store/types.js';

/** What this module uses of the service (the hosts pass the whole of it). */
export interface ResourcesDeps {
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

export interface Envelope {
  resource: Record<string, unknown>;
  roles: string[];
  actions: string[];
}

const verbs = (t: ResourceType) => ['read', 'write', 'delete'].map((v) => `${partitionOf(t)}/${v}`);
const container = (s: ResourcesDeps) => resourcesIn(s.store);

/** The stored document as the API shows it: without store bookkeeping. */
export function present(doc: AnyResource): Record<string, unknown> {
  const { id: _id, pk: _pk, _etag, ttl: _ttl, ...resource }: AnyResource & { _etag?: string } = doc;
  return resource;
}

/** Reads one resource (deleted ones included); built-in types come from code. */
export async function readResource(s: ResourcesDeps, t: ResourceType, name: string): Promise<AnyResource | undefined> {
  if (t.builtIn) return t.builtIn(s.config.instanceId).find((d) => d.name.toLowerCase() === name.toLowerCase());
  return seedOf(s, t, name) ?? container(s).read(partitionOf(t), resourceId(name));
}

/** The built-in resource of the name, when the type has built-ins beside stored ones. */
const seedOf = (s: ResourcesDeps, t: ResourceType, name: string) =>
  t.seeds?.(s.config.instanceId).find((d) => d.id === resourceId(name));

/** Built-in resources are read-only: a write or delete of one is a 409. */
function refuseSeed(s: ResourcesDeps, t: ResourceType, name: string): void {
  if (seedOf(s, t, name))
    throw conflict(`${t.type} ${name} is built in and read-only; copy it under another name to change it`);
}

/** The resource an action is on (its type and name), and who acts. */
export interface ResourceTarget {
  type: ResourceType;
  name: string;
  principal: Principal;
}

/** A listing of a type's resources: who lists, whether deleted ones are shown, and which page. */
export interface ResourceListing {
  type: ResourceType;
  principal: Principal;
  includeDeleted: boolean;
  query: PageQuery;
}

/** A page of the resources of a type that the caller may read, by name. */
export async function listResources(
  s: ResourcesDeps,
  { type: t, principal, includeDeleted, query }: ResourceListing,
): Promise<PageResult<Envelope>> {
  const read = `${partitionOf(t)}/read`;
  const fetch = async (continuation: string | undefined, limit: number): Promise<Page<AnyResource>> => {
    if (t.builtIn) return { items: t.builtIn(s.config.instanceId) };
    const page = await container(s).query({
      partition: partitionOf(t),
      where: includeDeleted ? [RESOURCES_ONLY] : [RESOURCES_ONLY, { field: 'deleted', op: 'ne', value: true }],
      orderBy: [{ field: 'name' }],
      limit,
      ...(continuation !== undefined ? { continuation } : {}),
    });
    // Built-in resources lead the first page.
    return continuation === undefined && t.seeds
      ? { ...page, items: [...t.seeds(s.config.instanceId), ...page.items] }
      : page;
  };
  const envelope = async (doc: AnyResource): Promise<Envelope | undefined> => {
    const access = await s.authorizer.access(principal, doc.object_id, verbs(t));
    if (!access.actions.includes(read)) return undefined;
    return {
      resource: {
        type: doc.type,
        name: doc.name,
        object_id: doc.object_id,
        display_name: doc.display_name ?? doc.name,
        description: doc.description ?? '',
        ...(includeDeleted ? { deleted: doc.deleted } : {}),
      },
      ...access,
    };
  };
  return s.pager.page(principal, {
    list: `resources\n${partitionOf(t)}\n${includeDeleted}`,
    query,
    fetch,
    keep: envelope,
  });
}

export async function getResource(s: ResourcesDeps, { type: t, principal, name }: ResourceTarget): Promise<Envelope> {
  const doc = await readResource(s, t, name);
  if (!doc) throw notFound(`${t.type} ${name} not found`);
  const shown = present(doc);
  return {
    resource: t.present ? t.present(shown) : shown,
    ...(await s.authorizer.access(principal, doc.object_id, verbs(t))),
  };
}

export async function upsertResource(
  s: ResourcesDeps,
  { type: t, principal, name }: ResourceTarget,
  body: DefinitionOf<ResourceKind>,
): Promise<{ object_id: string; version: number }> {
  if (body.name !== name) throw badRequest(`name: must equal the name in the path (${name})`);
  refuseSeed(s, t, name);
  const objectId = objectIdOf(s.config.instanceId, t, name);
  const ctx: HookContext = { services: s, principal, objectId };
  const authorized = t.authorizeWrite ? await container(s).read(partitionOf(t), resourceId(name)) : undefined;
  await t.authorizeWrite?.(body, authorized, ctx);
  await t.validate?.(body, ctx);
  const definition = { ...body };
  for (const field of [...SERVICE_FIELDS, 'type']) Reflect.deleteProperty(definition, field);

  const outcome = { created: false };
  const saved = await writeVersioned(s.store, container(s), {
    pk: partitionOf(t),
    id: resourceId(name),
    change: (existing) => {
      if (existing && existing.name !== name)
        throw conflict(`${t.type} ${existing.name} exists; names differ only by case`);
      // What was authorized is what gets replaced: a concurrent change means authorizing again.
      if (t.authorizeWrite && existing?._etag !== authorized?._etag)
        throw conflict(`${t.type} ${name} changed meanwhile; try again`);
      if (existing?.deleted) throw conflict(`${t.type} ${name} is deleted; purge it before creating it again`);
      outcome.created = !existing;
      const now = new Date().toISOString();
      return {
        ...definition,
        ...t.computed?.(definition, existing, ctx),
        id: resourceId(name),
        pk: partitionOf(t),
        type: t.type,
        name,
        object_id: objectId,
        created_on: existing?.created_on ?? now,
        created_by: existing?.created_by ?? principal.upn,
        updated_on: now,
        updated_by: principal.upn,
        deleted: false,
      };
    },
    kept: (shown) => (t.present ? t.present(shown) : shown),
  });
  s.resourceCache.invalidate(objectId);
  if (saved) {
    if (outcome.created) await t.afterCreate?.(saved, ctx);
    await t.afterChange?.(saved, ctx);
  }
  return { object_id: objectId, version: saved?.version ?? 1 };
}

export async function deleteResource(
  s: ResourcesDeps,
  { type: t, principal, name }: ResourceTarget,
): Promise<{ object_id: string; deleted: boolean }> {
  refuseSeed(s, t, name);
  const objectId = objectIdOf(s.config.instanceId, t, name);
  const authorized = t.authorizeDelete ? await container(s).read(partitionOf(t), resourceId(name)) : undefined;
  if (authorized) await t.authorizeDelete?.(authorized, { services: s, principal, objectId });
  const saved = await updateDocument(container(s), { pk: partitionOf(t), id: resourceId(name) }, (existing) => {
    if (!existing) throw notFound(`${t.type} ${name} not found`);
    if (t.authorizeDelete && existing._etag !== authorized?._etag)
      throw conflict(`${t.type} ${name} changed meanwhile; try again`);
    if (existing.deleted) return undefined;
    return { ...existing, deleted: true, updated_on: new Date().toISOString(), updated_by: principal.upn };
  });
  s.resourceCache.invalidate(objectId);
  if (saved) await t.afterChange?.(saved, { services: s, principal, objectId });
  return { object_id: objectId, deleted: true };
}

export async function purgeResource(
  s: ResourcesDeps,
  { type: t, principal, name }: ResourceTarget,
): Promise<{ object_id: string; is_success: boolean }> {
  refuseSeed(s, t, name);
  const objectId = objectIdOf(s.config.instanceId, t, name);
  const doc = await container(s).read(partitionOf(t), resourceId(name));
  if (!doc) throw notFound(`${t.type} ${name} not found`);
  if (!doc.deleted) throw conflict(`${t.type} ${name} is not deleted; delete it before purging it`);
  await t.authorizeDelete?.(doc, { services: s, principal, objectId });
  await dropVersions(s.store, doc);
  await container(s).delete(partitionOf(t), doc.id, { ifMatch: doc._etag });
  s.resourceCache.invalidate(objectId);
  const ctx = { services: s, principal, objectId };
  await t.afterPurge?.(doc, ctx);
  await t.afterChange?.(doc, ctx);
  return { object_id: objectId, is_success: true };
}

/** The versions of a resource, newest first (the current one included). */
export async function listResourceVersions(s: ResourcesDeps, t: ResourceType, name: string): Promise<VersionSummary[]> {
  const doc = await readResource(s, t, name);
  if (!doc) throw notFound(`${t.type} ${name} not found`);
  return listVersions(s.store, doc);
}

/** One version of a resource, in the shape of the resource's own GET. */
export async function getResourceVersion(
  s: ResourcesDeps,
  { type: t, principal, name }: ResourceTarget,
  version: number,
): Promise<Envelope> {
  const doc = await readResource(s, t, name);
  if (!doc) throw notFound(`${t.type} ${name} not found`);
  const { definition } = await readVersion(s.store, doc, version);
  return {
    resource: t.present ? t.present(definition) : definition,
    ...(await s.authorizer.access(principal, doc.object_id, verbs(t))),
  };
}

/**
 * Makes a version current again, as a new version: the definition it kept goes through every check and
 * rule of a write, as if sent again (a link it names must still exist). A secret value is never kept in a
 * version (reads mask it), so restoring a secret setting's version is refused.
 */
export async function restoreResourceVersion(
  s: ResourcesDeps,
  target: ResourceTarget,
  version: number,
): Promise<{ object_id: string; version: number }> {
  const { type: t, name } = target;
  const doc = await readResource(s, t, name);
  if (!doc) throw notFound(`${t.type} ${name} not found`);
  if (doc.deleted) throw deletedConflict(doc);
  const { definition, redacted } = await readVersion(s.store, doc, version);
  if (redacted) {
    throw badRequest(
      `Version ${version} of ${t.type} ${name} holds a secret, which versions do not keep: set its value again instead`,
    );
  }
  const body = t.schema.safeParse(definition);
  if (!body.success)
    throw badRequest(
      `Version ${version} no longer passes the checks of a ${t.type}: ` +
        body.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '),
    );
  return upsertResource(s, target, body.data);
}
