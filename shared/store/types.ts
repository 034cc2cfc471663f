// The narrow document-store interface every repository is written against; Cosmos and SQLite implement it.
import type { ContainerName } from './containers.js';

/** Every stored document has an id, unique within its partition, and its partition key value in `pk`. */
export interface Doc {
  id: string;
  pk: string;
  /** Seconds to live; the store removes the document after that (Cosmos TTL semantics). */
  ttl?: number;
}

/** A document as read back: with the ETag of the version read. */
export type Stored<T extends Doc> = T & { _etag: string };

export type JsonScalar = string | number | boolean | null;

/** A field path in dotted form (`resource.name`); only identifier characters are accepted. */
export type FieldPath = string;

export type Filter =
  | { field: FieldPath; op: 'eq' | 'ne' | 'lt' | 'le' | 'gt' | 'ge'; value: Exclude<JsonScalar, null> }
  | { field: FieldPath; op: 'in'; value: readonly Exclude<JsonScalar, null>[] }
  | { field: FieldPath; op: 'startsWith'; value: string }
  /** The string at `field` contains `value` (case-sensitive: store a lower-cased copy to search). */
  | { field: FieldPath; op: 'includes'; value: string }
  /** The array at `field` contains `value`. */
  | { field: FieldPath; op: 'contains'; value: Exclude<JsonScalar, null> }
  | { field: FieldPath; op: 'exists' | 'missing' };

export interface Query {
  /** Restricts the query to one partition; absent means all partitions. */
  partition?: string;
  /** All must hold. */
  where?: readonly Filter[];
  orderBy?: readonly { field: FieldPath; direction?: 'asc' | 'desc' }[];
  /** Page size; absent means every match. */
  limit?: number;
  /** The `continuation` of the previous page. */
  continuation?: string;
}

export interface Page<T> {
  items: T[];
  /** Present when more items follow; pass it back as `Query.continuation`. */
  continuation?: string;
}

export type Aggregate =
  { fn: 'count' } | { fn: 'sum' | 'min' | 'max'; field: FieldPath } | { fn: 'countDistinct'; field: FieldPath };

export interface AggregateQuery {
  partition?: string;
  where?: readonly Filter[];
  /** Fields to group by; each row carries them under their own path as key. */
  groupBy?: readonly FieldPath[];
  aggregates: Readonly<Record<string, Aggregate>>;
}

/** One result row: group values by field path, aggregate values by alias (null for sum/min/max of nothing). */
export type AggregateRow = Record<string, JsonScalar>;

export type PatchOp =
  | { op: 'set'; path: FieldPath; value: unknown }
  | { op: 'incr'; path: FieldPath; value: number }
  /** Appends `value` to the array at `path`, creating it when absent. */
  | { op: 'append'; path: FieldPath; value: unknown }
  | { op: 'remove'; path: FieldPath };

/** One write of a batch. */
export type BatchOperation<T extends Doc> =
  | { op: 'create'; doc: T }
  | { op: 'replace'; doc: T; ifMatch?: string }
  /**
   * The document `id` as `apply` makes it from the version the batch writes over (NotFoundError when it is
   * absent; undefined leaves it as it is). Concurrent writers never lose an update and the caller never
   * retries: the embedded store applies it inside the transaction, Cosmos DB reads, writes with the ETag
   * read and runs the batch again when another writer came first. `known`, a copy the caller has just
   * read, saves Cosmos DB its first read (its ETag guards the write all the same) and the embedded store
   * parsing the row again while it is current. `apply` makes a new document and leaves `current` as it is:
   * both stores hand it versions they keep (the one they last wrote of a busy document).
   */
  | { op: 'update'; id: string; apply: (current: Stored<T>) => T | undefined; known?: Stored<T> }
  /** Removes the document (NotFoundError when absent; PreconditionFailedError when `ifMatch` is stale). */
  | { op: 'delete'; id: string; ifMatch?: string };

/** A batch's document, checked to be of the batch's partition (and, for an update, to keep its id). */
export function inBatch<T extends Doc>(doc: T, pk: string, id = doc.id): T {
  if (doc.pk !== pk || doc.id !== id)
    throw new StoreError(
      `A batch writes documents of one partition (${pk}) under their own ids, not ${doc.pk}/${doc.id}`,
    );
  return doc;
}

export interface WriteOptions {
  /** Only write when the stored document still has this ETag; otherwise PreconditionFailedError. */
  ifMatch?: string;
}

/** One container: a set of documents sharing a partition key scheme. */
export interface Container<T extends Doc> {
  readonly name: string;
  read(pk: string, id: string): Promise<Stored<T> | undefined>;
  /** Fails with ConflictError when a document with this id exists in the partition. */
  create(doc: T): Promise<Stored<T>>;
  /**
   * Creates every document whose id is not yet taken in its partition, leaving existing ones as they are;
   * then fails with ConflictError naming how many existed. For bulk loads: not transactional on Cosmos
   * (the bulk API, which waits up to a second to fill a batch).
   */
  createMany(docs: readonly T[]): Promise<void>;
  /**
   * Writes a few documents of one partition (at most 100) in one round trip, all or none: ConflictError when
   * a created id is taken, NotFoundError when a replaced document is gone, PreconditionFailedError on a stale
   * ETag. Cosmos DB: a transactional batch.
   */
  writeBatch(pk: string, operations: readonly BatchOperation<T>[]): Promise<void>;
  upsert(doc: T, options?: WriteOptions): Promise<Stored<T>>;
  /** Fails with NotFoundError when absent, PreconditionFailedError on a stale ETag. */
  replace(doc: T, options?: WriteOptions): Promise<Stored<T>>;
  /** Returns false when the document was absent. */
  delete(pk: string, id: string, options?: WriteOptions): Promise<boolean>;
  patch(pk: string, id: string, ops: readonly PatchOp[], options?: WriteOptions): Promise<Stored<T>>;
  query(query: Query): Promise<Page<Stored<T>>>;
  aggregate(query: AggregateQuery): Promise<AggregateRow[]>;
}

/**
 * What each container holds, so that its name alone decides the type of `DocumentStore.container(name)`: an
 * entry `name` (a container's documents) or `name/kind` (one kind of several a container holds). The module
 * that owns a kind of document declares its entry beside it (declaration merging), so the store, a foundation,
 * names no feature.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- filled by declaration merging
export interface StoredDocs {}

/** The documents a container holds: every entry of StoredDocs under its name. */
export type DocsOf<N extends string> = {
  [K in keyof StoredDocs]: K extends N | `${N}/${string}` ? StoredDocs[K] : never;
}[keyof StoredDocs];

export interface DocumentStore {
  readonly kind: 'embedded' | 'cosmos';
  container<N extends ContainerName>(name: N): Container<DocsOf<N>>;
  close(): Promise<void>;
}

/**
 * Whether `container` was opened under `name`, which decides the type of its documents (StoredDocs). This is the
 * one place the store takes a document type on trust: documents are read as written, and only the modules that
 * declare a container's documents write to it (a container holding several kinds is read through narrowed()).
 */
const isNamed = <N extends ContainerName>(
  container: Container<Doc>,
  name: N,
): container is Container<Doc> & Container<DocsOf<N>> => container.name === name;

/** The container a store opened under `name` (StoreError when it opened none), as that name's documents. */
export function containerNamed<N extends ContainerName>(
  containers: ReadonlyMap<string, Container<Doc>>,
  name: N,
): Container<DocsOf<N>> {
  const container = containers.get(name);
  if (!container || !isNamed(container, name)) throw new StoreError(`Unknown container ${name}`);
  return container;
}

/** The `code` a failed driver call carries (SQLite's name for the error, Node's module loader's), if any. */
export const errorCode = (e: unknown): unknown =>
  typeof e === 'object' && e !== null && 'code' in e ? e.code : undefined;

export class StoreError extends Error {
  override name = 'StoreError';
}
/** A document with that id already exists. */
export class ConflictError extends StoreError {
  override name = 'ConflictError';
}
/** The document is absent. */
export class NotFoundError extends StoreError {
  override name = 'NotFoundError';
}
/** The ETag given no longer matches: somebody else wrote first; read again and retry. */
export class PreconditionFailedError extends StoreError {
  override name = 'PreconditionFailedError';
}
