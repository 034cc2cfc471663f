// Versions of resources: every create and update keeps the definition it replaced, as a document of its own
// in the resource's partition, written in the same batch as the change (one transactional batch on Cosmos
// DB), so a change and the version it replaced are stored together or not at all.
import { conflict, notFound } from '../errors.js';
import { narrowed } from '../store/narrowed.js';
import {
  ConflictError,
  PreconditionFailedError,
  type Container,
  type DocumentStore,
  type Filter,
  type Stored,
} from '../store/types.js';
import type { AnyResource } from './types/resource-type.js';

/** A definition a change replaced: the resource as it was, under `definition`. */
export interface VersionDoc {
  id: string;
  pk: string;
  /** The id of the resource it is a version of; the field that tells version documents from resources. */
  version_of: string;
  version: number;
  updated_on: string;
  updated_by: string;
  definition: Record<string, unknown>;
  /** Reads show less than the definition held (a secret value): it cannot be restored. */
  redacted: boolean;
}

declare module '../store/types.js' {
  interface StoredDocs {
    'resources/version': VersionDoc;
  }
}

type Store = Pick<DocumentStore, 'container'>;

/** The version documents of the resources container (told from resources by `version_of`). */
const versionsIn = (store: Store): Container<VersionDoc> =>
  narrowed(store.container('resources'), (doc): doc is VersionDoc => 'version_of' in doc);

/** The one filter that keeps version documents out of a query of resources. */
export const RESOURCES_ONLY: Filter = { field: 'version_of', op: 'missing' };

/** The version a resource is at: resources written before versions existed are at 1. */
export const versionOf = (doc: { version?: unknown }) => (typeof doc.version === 'number' ? doc.version : 1);

// Resource names never hold `~`, so a version's id never names a resource.
const versionId = (resourceId: string, version: number) => `${resourceId}~v${version}`;

/** What a version keeps of a definition: all of it, or (secret settings) what reads show. */
export type Kept = (definition: Record<string, unknown>) => Record<string, unknown>;

/** The definition as a version keeps it: without store bookkeeping. */
function snapshot(doc: Stored<AnyResource>, kept: Kept): VersionDoc {
  const { id, pk, _etag: _e, ttl: _t, ...definition } = doc;
  const shown = kept(definition);
  const redacted = JSON.stringify(shown) !== JSON.stringify(definition);
  return {
    id: versionId(id, versionOf(doc)),
    pk,
    version_of: id,
    version: versionOf(doc),
    updated_on: doc.updated_on,
    updated_by: doc.updated_by,
    definition: shown,
    redacted,
  };
}

/** A change of one resource: its key, how it changes, and what a version keeps of what it replaces. */
export interface VersionedWrite<T extends AnyResource> {
  pk: string;
  id: string;
  change: (current: Stored<T> | undefined) => T | undefined;
  kept?: Kept;
}

/**
 * `updateDocument` for resources: reads the resource (through `view`, its kind's), applies `change` and writes
 * it as the next version, keeping the one it replaced, in one batch guarded by the ETag read. A concurrent
 * writer makes the batch fail whole; it is read and run again, so no change and no version is lost. Answers
 * the document as written (a batch answers no ETag), or the current one when `change` wrote nothing.
 */
export async function writeVersioned<T extends AnyResource>(
  store: Store,
  view: Container<T>,
  write: VersionedWrite<T>,
): Promise<T | undefined> {
  const { pk, id, change } = write;
  const kept: Kept = write.kept ?? ((d) => d);
  // The resource and the version it replaces are written together: the container holds both kinds.
  const both = store.container('resources');
  for (let attempt = 1; ; attempt++) {
    const current = await view.read(pk, id);
    const next = change(current);
    if (next === undefined) return current;
    try {
      if (!current) return await view.create({ ...next, version: 1 });
      const written = { ...next, version: versionOf(current) + 1 };
      await both.writeBatch(pk, [
        { op: 'replace', doc: written, ifMatch: current._etag },
        { op: 'create', doc: snapshot(current, kept) },
      ]);
      return written;
    } catch (e) {
      const raced = e instanceof PreconditionFailedError || e instanceof ConflictError;
      if (!raced || attempt >= 50) throw e;
      await new Promise((r) => setTimeout(r, Math.random() * Math.min(50, attempt * 2)));
    }
  }
}

export interface VersionSummary {
  version: number;
  updated_on: string;
  updated_by: string;
}

/** Every version of a resource, newest first, the current one included. */
export async function listVersions(store: Store, current: AnyResource): Promise<VersionSummary[]> {
  const { items } = await versionsIn(store).query({
    partition: current.pk,
    where: [{ field: 'version_of', op: 'eq', value: current.id }],
  });
  const kept = items.map(({ version, updated_on, updated_by }) => ({ version, updated_on, updated_by }));
  return [
    { version: versionOf(current), updated_on: current.updated_on, updated_by: current.updated_by },
    ...kept.sort((a, b) => b.version - a.version),
  ];
}

/** One version's definition (the current one from the resource itself); 404 when there is no such version. */
export async function readVersion(
  store: Store,
  current: AnyResource,
  version: number,
): Promise<Pick<VersionDoc, 'definition' | 'redacted'>> {
  if (version === versionOf(current)) {
    const { id: _i, pk: _p, ttl: _t, ...definition } = current;
    Reflect.deleteProperty(definition, '_etag');
    return { definition, redacted: false };
  }
  const doc = await versionsIn(store).read(current.pk, versionId(current.id, version));
  if (!doc) throw notFound(`Version ${version} of ${current.type} ${current.name} not found`);
  return doc;
}

/** Removes every version of a resource (a purge): before the resource, so a failure leaves it purgeable. */
export async function dropVersions(store: Store, resource: AnyResource): Promise<void> {
  const versions = versionsIn(store);
  const { items } = await versions.query({
    partition: resource.pk,
    where: [{ field: 'version_of', op: 'eq', value: resource.id }],
  });
  for (const v of items) await versions.delete(v.pk, v.id);
}

/** A restore of a version that would bring back a deleted resource: purge or re-create instead. */
export const deletedConflict = (resource: AnyResource) =>
  conflict(`${resource.type} ${resource.name} is deleted; it has no current version to restore over`);
