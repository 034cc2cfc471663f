// What plugin and artifact packages do alike: read a version's file from a package store; soft delete (a
// deleted package leaves every list and keeps its name until purged); purge (the record, then the files of
// all its versions).
import type { Principal } from '../auth/principal.js';
import { badRequest, conflict, notFound, statusCodeOf } from '../errors.js';
import { resourceId } from '../providers/types/resource-type.js';
import type { BlobContainer } from '../store/storage.js';
import type { Container, Doc } from '../store/types.js';
import { updateDocument } from '../store/update.js';
import type { PackageStores } from './packages.js';

/** A file to read from a package store, and the most bytes it may have. */
export interface StoredFile {
  storeType: 'Public' | 'Private';
  path: string;
  maxBytes: number;
}

/** The bytes of `path` in the Public or Private store: 400 when it is not configured or too large, 404 when absent. */
export async function readFromStore(stores: PackageStores, { storeType, path, maxBytes }: StoredFile): Promise<Buffer> {
  const store = storeType === 'Public' ? stores.public : stores.private;
  if (!store) throw badRequest('package_store_type: no Public package store is configured (PACKAGE_STORE_PUBLIC_URL)');
  try {
    const blob = (await store.client()).getBlobClient(path);
    if (((await blob.getProperties()).contentLength ?? 0) > maxBytes)
      throw badRequest(`The package is larger than ${maxBytes} bytes`);
    return await blob.downloadToBuffer();
  } catch (e) {
    if (statusCodeOf(e) === 404) throw notFound(`The ${storeType} store has no ${path}`);
    throw e;
  }
}

interface PackageRecord extends Doc {
  deleted: boolean;
  updated_on: string;
  updated_by?: string;
  versions: { blob_name: string }[];
}

/** A package by its partition and name; `what` names it in messages: "Plugin package", "Artifact package". */
export interface PackageRef {
  pk: string;
  name: string;
  what: string;
}

/** Marks the package deleted (again: nothing changes); 404 when there is none. */
export async function softDeletePackage<T extends PackageRecord>(
  docs: Container<T>,
  { pk, name, what }: PackageRef,
  principal: Principal,
): Promise<T> {
  const saved = await updateDocument(docs, { pk, id: resourceId(name) }, (current) => {
    if (!current) throw notFound(`${what} ${name} not found`);
    // Deleting a deleted package again changes nothing.
    return current.deleted
      ? undefined
      : { ...current, deleted: true, updated_on: new Date().toISOString(), updated_by: principal.upn };
  });
  if (!saved) throw notFound(`${what} ${name} not found`);
  return saved;
}

/** Removes a deleted package's record, then the files of all its versions; 409 unless it was deleted first. */
export async function purgePackage<T extends PackageRecord>(
  docs: Container<T>,
  { pk, name, what }: PackageRef,
  files: BlobContainer,
): Promise<T> {
  const doc = await docs.read(pk, resourceId(name));
  if (!doc) throw notFound(`${what} ${name} not found`);
  if (!doc.deleted) throw conflict(`${what} ${name} is not deleted; delete it before purging it`);
  await docs.delete(pk, doc.id, { ifMatch: doc._etag });
  const container = await files.client();
  await Promise.all(
    doc.versions.map((v) =>
      container
        .getBlockBlobClient(v.blob_name)
        .deleteIfExists()
        .catch(() => undefined),
    ),
  );
  return doc;
}
