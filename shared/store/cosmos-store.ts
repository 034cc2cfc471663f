// The Cosmos DB document store: @azure/cosmos with managed identity in Azure, a key only for emulators.
import { CosmosClient, type Container as SdkContainer, type IndexingPolicy, type JSONObject, type OperationInput, type PatchOperation } from '@azure/cosmos';
import type { TokenCredential } from '@azure/core-auth';
import { CredentialGate, CredentialGateError } from '../net/credential-gate.js';
import { ConfigError } from '../config.js';
import { CONTAINER_LIST, indexFields, type ContainerDefinition } from './containers.js';
import { aggregateSql, selectSql } from './cosmos-sql.js';
import { segments } from './fields.js';
import {
  ConflictError,
  NotFoundError,
  PreconditionFailedError,
  StoreError,
  inBatch,
  type AggregateQuery,
  type AggregateRow,
  type BatchOperation,
  type Container,
  type Doc,
  type DocumentStore,
  type JsonScalar,
  type Page,
  type PatchOp,
  type Query,
  type Stored,
  type WriteOptions,
} from './types.js';

export interface CosmosStoreOptions {
  endpoint: string;
  database: string;
  /** Account key: emulators and local Cosmos-compatible servers only. Without it, Entra ID is used. */
  key?: string | undefined;
  /** Client id of the user-assigned managed identity. */
  clientId?: string | undefined;
  /** Create the database and containers when missing (needs control-plane rights: emulators only). */
  createContainers?: boolean;
  definitions?: readonly ContainerDefinition[];
}

/** The indexing policy a container definition asks for: everything indexed, plus its composite indexes. */
export function cosmosIndexingPolicy(def: ContainerDefinition): IndexingPolicy {
  const composite = def.indexes.map(indexFields).filter((fields) => fields.length > 1);
  return {
    indexingMode: 'consistent',
    automatic: true,
    includedPaths: [{ path: '/*' }],
    excludedPaths: [{ path: '/"_etag"/?' }],
    ...(composite.length > 0
      ? { compositeIndexes: composite.map((fields) => fields.map((f) => ({ path: `/${segments(f).join('/')}`, order: 'ascending' as const }))) }
      : {}),
  };
}

/** How the store authenticates, as an operator would name it. */
const authMode = (o: CosmosStoreOptions) =>
  o.key ? 'account key (COSMOS_KEY)' : o.clientId ? `managed identity (AZURE_CLIENT_ID=${o.clientId})` : 'Entra ID (managed identity, or az login)';

/** Why Cosmos DB cannot be used, in words an operator can act on. */
function whyUnusable(e: unknown, database: string): string {
  const names = [e, (e as { cause?: unknown } | undefined)?.cause].map((x) => (x instanceof Error ? x.name : ''));
  if (names.some((n) => n === 'CredentialUnavailableError' || n === 'AggregateAuthenticationError')) return 'no Azure credential is available here';
  if (names.includes('AuthenticationError')) return 'the identity could not get a token';
  if (names.includes('AbortError') || names.includes('TimeoutError')) return 'no answer within 15 s';
  switch (status(e)) {
    case 401:
      return 'the credential was refused';
    case 403:
      return 'the identity has no data-plane role on the account (Cosmos DB Built-in Data Contributor)';
    case 404:
      return `database ${database} does not exist (provision it from infra/)`;
  }
  const code = (e as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string') return `cannot connect (${code})`;
  return (e instanceof Error ? e.message : String(e)).split('\n')[0]?.slice(0, 200) ?? 'unknown error';
}

/**
 * Creates what is missing (emulators), then reads the database's metadata: a wrong endpoint or credential
 * fails at start-up, in one line naming the setting and the authentication, not at the first request.
 */
async function connect(client: CosmosClient, database: ReturnType<CosmosClient['database']>, definitions: readonly ContainerDefinition[], options: CosmosStoreOptions): Promise<void> {
  const abortSignal = AbortSignal.timeout(15_000);
  try {
    if (options.createContainers) {
      await client.databases.createIfNotExists({ id: options.database }, { abortSignal });
      for (const def of definitions) {
        await database.containers.createIfNotExists(
          {
            id: def.name,
            partitionKey: { paths: [def.partitionKeyPath] },
            indexingPolicy: cosmosIndexingPolicy(def),
            ...(def.defaultTtlSeconds !== undefined ? { defaultTtl: def.defaultTtlSeconds } : {}),
          },
          { abortSignal },
        );
      }
    }
    await database.read({ abortSignal });
  } catch (e) {
    throw new ConfigError(`Cosmos DB is not usable: COSMOS_ENDPOINT=${options.endpoint}, COSMOS_DATABASE=${options.database}, authentication: ${authMode(options)}: ${whyUnusable(e, options.database)}`);
  }
}

/**
 * A Cosmos DB token for the account's own https host only, through the credential gate. An endpoint that may
 * not have one gets a credential that refuses: start-up then fails naming the endpoint and why.
 */
function cosmosCredential(endpoint: string, clientId: string | undefined): TokenCredential {
  const gate = new CredentialGate({ serviceAudience: '', serviceHosts: [], clientId });
  const problem = gate.urlProblem('cosmos', endpoint);
  if (problem) return { getToken: () => Promise.reject(new CredentialGateError(`COSMOS_ENDPOINT ${problem} (or set COSMOS_KEY)`)) };
  return gate.credentialFor('cosmos', endpoint);
}

/** A client for the account: its key where one is given (emulators), else Entra ID. */
export function cosmosClient(options: Pick<CosmosStoreOptions, 'endpoint' | 'key' | 'clientId'>): CosmosClient {
  const plainHttp = options.endpoint.startsWith('http://');
  return new CosmosClient({
    endpoint: options.endpoint,
    ...(options.key
      ? { key: options.key }
      : { aadCredentials: cosmosCredential(options.endpoint, options.clientId) }),
    // Local Cosmos-compatible servers over plain HTTP have no regional endpoints to discover.
    ...(plainHttp ? { connectionPolicy: { enableEndpointDiscovery: false } } : {}),
  });
}

export async function openCosmosStore(options: CosmosStoreOptions): Promise<DocumentStore> {
  const definitions = options.definitions ?? CONTAINER_LIST;
  const client = cosmosClient(options);
  const database = client.database(options.database);
  await connect(client, database, definitions, options);
  const containers = new Map(definitions.map((d) => [d.name, new CosmosContainer<Doc>(database.container(d.name), d.name)]));
  return {
    kind: 'cosmos',
    container<T extends Doc>(name: string): Container<T> {
      const c = containers.get(name);
      if (!c) throw new StoreError(`Unknown container ${name}`);
      return c as unknown as Container<T>;
    },
    close() {
      client.dispose();
      return Promise.resolve();
    },
  };
}

class CosmosContainer<T extends Doc> implements Container<T> {
  constructor(
    private readonly sdk: SdkContainer,
    readonly name: string,
  ) {}

  async read(pk: string, id: string): Promise<Stored<T> | undefined> {
    try {
      const { resource } = await this.sdk.item(id, pk).read<T>();
      return resource ? clean(resource) : undefined;
    } catch (e) {
      if (status(e) === 404) return undefined;
      throw mapError(e, id);
    }
  }

  async create(doc: T): Promise<Stored<T>> {
    return this.write(id(doc), () => this.sdk.items.create<T>(doc));
  }

  async createMany(docs: readonly T[]): Promise<void> {
    let conflicts = 0;
    for (let i = 0; i < docs.length; i += 1000) {
      const chunk = docs.slice(i, i + 1000);
      const results = await this.sdk.items.executeBulkOperations(chunk.map((d) => ({ operationType: 'Create' as const, partitionKey: d.pk, resourceBody: d as unknown as JSONObject })));
      for (const r of results) {
        const statusCode = r.response?.statusCode ?? status(r.error) ?? 500;
        if (statusCode === 409) conflicts++;
        else if (statusCode >= 400) throw new StoreError(`Bulk create failed with status ${statusCode}`);
      }
    }
    if (conflicts > 0) throw new ConflictError(`${conflicts} of ${docs.length} documents already existed`);
  }

  /**
   * Updates of a document from this process wait for the batch before them. What waits meanwhile is
   * written next as one batch (the updates of the document applied in turn, up to 100 operations), starting
   * from the versions the batch before wrote instead of reading them again: the turns of a busy session cost
   * a round trip per group, not two per turn. Another writer's change in between fails the ETag check, and
   * that attempt reads again; a group refused as a whole (one turn's document taken, say) is written again
   * turn by turn, so each gets its own answer.
   */
  private readonly waiting = new Map<string, Waiting<T>[]>();

  writeBatch(pk: string, operations: readonly BatchOperation<T>[]): Promise<void> {
    if (operations.length > 100) return Promise.reject(new StoreError('A batch holds at most 100 documents'));
    const updated = operations.flatMap((o) => (o.op === 'update' ? [o.id] : []));
    if (updated.length === 0) return this.batch(pk, operations, false).then(() => undefined);
    const key = JSON.stringify([pk, ...updated.sort()]);
    return new Promise<void>((resolve, reject) => {
      const entry: Waiting<T> = { operations, done: (e) => (e === undefined ? resolve() : reject(e)) };
      const queue = this.waiting.get(key);
      if (queue) return void queue.push(entry);
      this.waiting.set(key, []);
      void this.drain(key, pk, entry);
    });
  }

  /** Writes one key's updates: the first alone (with its caller's copy), then each group that waited. */
  private async drain(key: string, pk: string, first: Waiting<T>): Promise<void> {
    let left = await this.writeGroup(pk, [first], false, undefined);
    for (let queue = this.waiting.get(key); queue && queue.length > 0; queue = this.waiting.get(key)) {
      left = await this.writeGroup(pk, takeGroup(queue), true, left);
    }
    this.waiting.delete(key);
  }

  /** Answers each of the group; gives the versions its last successful batch wrote. */
  private async writeGroup(pk: string, group: readonly Waiting<T>[], stale: boolean, left: Written<T> | undefined): Promise<Written<T> | undefined> {
    if (group.length > 1) {
      try {
        const written = await this.batch(pk, mergeGroup(group), stale, left);
        for (const g of group) g.done();
        return written;
      } catch {
        // Refused as a whole: each on its own below, from a fresh read.
        left = undefined;
      }
    }
    for (const g of group) {
      try {
        left = await this.batch(pk, g.operations, stale || group.length > 1, left);
        g.done();
      } catch (e) {
        left = undefined;
        g.done(e instanceof Error ? e : new StoreError('The batch write failed'));
      }
    }
    return left;
  }

  /** Writes the batch; answers the versions of the updated documents it wrote. */
  private async batch(pk: string, operations: readonly BatchOperation<T>[], stale: boolean, left?: Written<T>): Promise<Written<T>> {
    for (let attempt = 1; ; attempt++) {
      // Updates become replaces guarded by the ETag of the version just read.
      const writes: { op: BatchOperation<T>; body: OperationInput; updated?: T }[] = [];
      for (const o of operations) {
        if (o.op === 'create') writes.push({ op: o, body: { operationType: 'Create', resourceBody: inBatch(o.doc, pk) as unknown as JSONObject } });
        else if (o.op === 'replace') writes.push({ op: o, body: replaceInput(inBatch(o.doc, pk), o.ifMatch) });
        else if (o.op === 'delete') writes.push({ op: o, body: { operationType: 'Delete', id: o.id, partitionKey: pk, ...(o.ifMatch !== undefined ? { ifMatch: o.ifMatch } : {}) } });
        else {
          const first = attempt === 1 ? (stale ? left?.get(o.id) : o.known) : undefined;
          const current = first ?? (await this.read(pk, o.id));
          if (!current) throw new NotFoundError(`${this.name}/${pk}/${o.id} not found`);
          const next = o.apply(current);
          if (next) writes.push({ op: o, body: replaceInput(inBatch(next, pk, o.id), current._etag), updated: next });
        }
      }
      if (writes.length === 0) return new Map();
      let response;
      try {
        response = await this.sdk.items.batch(writes.map((w) => w.body), pk);
      } catch (e) {
        throw mapError(e, this.name);
      }
      // A failed batch answers per operation: the failing one's status, 424 for the others (nothing written).
      const statuses = response.result?.map((r) => r.statusCode) ?? [response.code ?? 500];
      if (statuses.every((s) => s < 400)) {
        const written: Written<T> = new Map();
        writes.forEach((w, i) => {
          const etag = response.result?.[i]?.eTag;
          if (w.updated && etag) written.set(w.updated.id, { ...w.updated, _etag: etag });
        });
        return written;
      }
      const failing = statuses.findIndex((s) => s >= 400 && s !== 424);
      const code = statuses[failing] ?? 424;
      // An update raced by another writer: read again and run the batch again, after a short jittered wait.
      if (code === 412 && writes[failing]?.op.op === 'update' && attempt < 20) {
        await new Promise((r) => setTimeout(r, Math.random() * Math.min(50, attempt * 2)));
        continue;
      }
      if (code === 409 || code === 412 || code === 404) throw mapError({ code }, `${this.name}/${pk} (batch)`);
      throw new StoreError(`Batch write failed with status ${code}`);
    }
  }

  async upsert(doc: T, options: WriteOptions = {}): Promise<Stored<T>> {
    return this.write(id(doc), () => this.sdk.items.upsert<T>(doc, condition(options)));
  }

  async replace(doc: T, options: WriteOptions = {}): Promise<Stored<T>> {
    return this.write(id(doc), () => this.sdk.item(doc.id, doc.pk).replace<T>(doc, condition(options)));
  }

  async delete(pk: string, id: string, options: WriteOptions = {}): Promise<boolean> {
    try {
      await this.sdk.item(id, pk).delete(condition(options));
      return true;
    } catch (e) {
      if (status(e) === 404 && options.ifMatch === undefined) return false;
      throw mapError(e, id);
    }
  }

  async patch(pk: string, id: string, ops: readonly PatchOp[], options: WriteOptions = {}): Promise<Stored<T>> {
    const operations: PatchOperation[] = ops.map((op) => {
      const path = `/${segments(op.path).join('/')}`;
      switch (op.op) {
        case 'set':
          return { op: 'set', path, value: op.value };
        case 'incr':
          return { op: 'incr', path, value: op.value };
        case 'append':
          return { op: 'add', path: `${path}/-`, value: op.value };
        case 'remove':
          return { op: 'remove', path };
      }
    });
    return this.write(id, () => this.sdk.item(id, pk).patch<T>(operations, condition(options)));
  }

  async query(q: Query): Promise<Page<Stored<T>>> {
    const spec = selectSql(q);
    const iterator = this.sdk.items.query<T>(spec, {
      ...(q.partition !== undefined ? { partitionKey: q.partition } : {}),
      ...(q.limit !== undefined ? { maxItemCount: q.limit } : {}),
      ...(q.continuation !== undefined ? { continuationToken: q.continuation } : {}),
    });
    try {
      if (q.limit === undefined) {
        const { resources } = await iterator.fetchAll();
        return { items: resources.map((r) => clean(r)) };
      }
      const page = await iterator.fetchNext();
      const items = page.resources.map((r) => clean(r));
      return page.hasMoreResults && page.continuationToken ? { items, continuation: page.continuationToken } : { items };
    } catch (e) {
      throw mapError(e, this.name);
    }
  }

  async aggregate(q: AggregateQuery): Promise<AggregateRow[]> {
    const plan = aggregateSql(q);
    const groupBy = q.groupBy ?? [];
    const run = async <R>(spec: Parameters<SdkContainer['items']['query']>[0]) =>
      (await this.sdk.items.query<R>(spec, q.partition !== undefined ? { partitionKey: q.partition } : {}).fetchAll()).resources;
    try {
      if (groupBy.length === 0) {
        const row: AggregateRow = {};
        for (const v of plan.values) {
          const [value] = await run<JsonScalar>(v.spec);
          row[v.alias] = value ?? (q.aggregates[v.alias]?.fn === 'count' ? 0 : null);
        }
        for (const d of plan.distinct) row[d.alias] = (await run<unknown>(d.spec)).length;
        return [row];
      }
      // Grouped: merge the GROUP BY rows and the distinct projections on the group key.
      const rows = new Map<string, AggregateRow>();
      const rowFor = (g: Record<string, unknown>) => {
        const values = groupBy.map((_, i) => (g[`g${i}`] ?? null) as JsonScalar);
        const key = JSON.stringify(values);
        const existing = rows.get(key);
        if (existing) return existing;
        const row: AggregateRow = {};
        groupBy.forEach((field, i) => (row[field] = values[i] ?? null));
        for (const [name, a] of Object.entries(q.aggregates)) row[name] = a.fn === 'count' || a.fn === 'countDistinct' ? 0 : null;
        rows.set(key, row);
        return row;
      };
      if (plan.grouped) {
        for (const g of await run<Record<string, JsonScalar>>(plan.grouped)) {
          const row = rowFor(g);
          for (const name of Object.keys(q.aggregates)) if (name in g) row[name] = g[name] ?? null;
        }
      }
      for (const d of plan.distinct) {
        for (const g of await run<Record<string, unknown>>(d.spec)) {
          const row = rowFor(g);
          row[d.alias] = (row[d.alias] as number) + 1;
        }
      }
      return [...rows.values()];
    } catch (e) {
      throw mapError(e, this.name);
    }
  }

  private async write(id: string, op: () => Promise<{ resource?: T | undefined }>): Promise<Stored<T>> {
    try {
      const { resource } = await op();
      if (!resource) throw new StoreError(`No document returned for ${id}`);
      return clean(resource);
    } catch (e) {
      throw mapError(e, id);
    }
  }
}

const id = (doc: Doc) => doc.id;
const condition = (o: WriteOptions) =>
  o.ifMatch !== undefined ? { accessCondition: { type: 'IfMatch', condition: o.ifMatch } } : {};
const status = (e: unknown): number | undefined =>
  typeof e === 'object' && e !== null && 'code' in e && typeof e.code === 'number' ? e.code : undefined;

function mapError(e: unknown, what: string): Error {
  switch (status(e)) {
    case 409:
      return new ConflictError(`${what} already exists`);
    case 412:
      return new PreconditionFailedError(`${what} was changed by another writer`);
    case 404:
      return new NotFoundError(`${what} not found`);
    default:
      return e instanceof Error ? e : new StoreError(String(e));
  }
}

const replaceInput = (doc: Doc, ifMatch: string | undefined): OperationInput => ({
  operationType: 'Replace',
  id: doc.id,
  partitionKey: doc.pk,
  resourceBody: doc as unknown as JSONObject,
  ...(ifMatch !== undefined ? { ifMatch } : {}),
});

/** The versions a batch wrote of the documents it updated, by id. */
type Written<T extends Doc> = Map<string, Stored<T>>;

/** A batch waiting for the one before it on the same documents, and how to answer its caller. */
interface Waiting<T extends Doc> {
  operations: readonly BatchOperation<T>[];
  done: (error?: Error) => void;
}

/** The next group from the front of a queue: as many waiting batches as fit in one (100 operations). */
function takeGroup<T extends Doc>(queue: Waiting<T>[]): Waiting<T>[] {
  let n = 1;
  for (let ops = queue[0]?.operations.length ?? 0; n < queue.length && ops + (queue[n]?.operations.length ?? 0) <= 100; n++) ops += queue[n]?.operations.length ?? 0;
  return queue.splice(0, n);
}

/**
 * One batch of a group: each updated document once, its updates applied in turn, then every other operation
 * in order. The updates come first: a stale ETag (another writer came first) then fails the batch before
 * anything else in it, on the local Cosmos-compatible server too, which does not roll a batch back.
 */
function mergeGroup<T extends Doc>(group: readonly Waiting<T>[]): BatchOperation<T>[] {
  const updates = new Map<string, ((current: Stored<T>) => T | undefined)[]>();
  const rest: BatchOperation<T>[] = [];
  for (const o of group.flatMap((g) => g.operations)) {
    if (o.op === 'update') updates.set(o.id, [...(updates.get(o.id) ?? []), o.apply]);
    else rest.push(o);
  }
  const composed = [...updates].map(([id, applies]): BatchOperation<T> => ({
    op: 'update',
    id,
    apply: (current) => {
      let doc = current;
      let changed = false;
      for (const apply of applies) {
        const next = apply(doc);
        if (next) [doc, changed] = [{ ...next, _etag: current._etag }, true];
      }
      return changed ? doc : undefined;
    },
  }));
  return [...composed, ...rest];
}

/** Drops Cosmos system properties other than the ETag. */
function clean<T extends Doc>(resource: T): Stored<T> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(resource)) if (!k.startsWith('_') || k === '_etag') out[k] = v;
  return out as unknown as Stored<T>;
}
