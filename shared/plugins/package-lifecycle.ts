// Soft delete and purge of a versioned package's record, the same for plugin and artifact packages: a
// deleted package leaves every list and keeps its name until purged; a purge removes the record, then the
// files of all its versions.
import type { ContainerClient } from '@azure/storage-blob';
import type { Principal } from '../auth/principal.js';
import { conflict, notFound } from '../errors.js';
import { resourceId } from '../providers/resource-type.js';
import type { Container, Doc } from '../store/types.js';
import { updateDocument } from '../store/update.js';

interface PackageRecord extends Doc {
  deleted: boolean;
  updated_on: string;
  updated_by?: string;
  versions: { blob_name: string }[];
}

/** `what` names the package in messages: "Plugin package", "Artifact package". */
export async function softDeletePackage<T extends PackageRecord>(docs: Container<T>, pk: string, name: string, principal: Principal, what: string): Promise<T> {
  const saved = await updateDocument(docs, pk, resourceId(name), (current) => {
    if (!current) throw notFound(`${what} ${name} not found`);
    // Deleting a deleted package again changes nothing.
    return current.deleted ? undefined : { ...current, deleted: true, updated_on: new Date().toISOString(), updated_by: principal.upn };
  });
  if (!saved) throw notFound(`${what} ${name} not found`);
  return saved;
}

export async function purgePackage<T extends PackageRecord>(docs: Container<T>, pk: string, name: string, files: ContainerClient, what: string): Promise<T> {
  const doc = await docs.read(pk, resourceId(name));
  if (!doc) throw notFound(`${what} ${name} not found`);
  if (!doc.deleted) throw conflict(`${what} ${name} is not deleted; delete it before purging it`);
  await docs.delete(pk, doc.id, { ifMatch: doc._etag });
  await Promise.all(doc.versions.map((v) => files.getBlockBlobClient(v.blob_name).deleteIfExists().catch(() => undefined)));
  return doc;
}
