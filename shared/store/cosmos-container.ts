// One Cosmos DB container as a store container: reads, writes and patches as single SDK calls, queries and
// aggregates from the parameterized SQL of cosmos-sql.ts, batches through cosmos-batch.ts. Documents come
// back without Cosmos's system properties, the ETag kept.
import type { Container as SdkContainer, PatchOperation, Resource } from '@azure/cosmos';
import { BatchWriter } from './cosmos-batch.js';
import { mapError, status } from './cosmos-errors.js';
import { itemBody, withoutSystemProperties as clean } from './cosmos-items.js';
import { aggregateSql, selectSql } from './cosmos-sql.js';
import { segments } from './fields.js';
import {
  ConflictError,
  StoreError,
  type AggregateQuery,
  type AggregateRow,
  type BatchOperation,
  type Container,
  type Doc,
  type JsonScalar,
  type Page,
  type PatchOp,
  type Query,
  type Stored,
  type WriteOptions,
} from './types.js';

export class CosmosContainer<T extends Doc> implements Container<T> {
  private readonly batches: BatchWriter<T>;

  constructor(
    private readonly sdk: SdkContainer,
    readonly name: string,
  ) {
    this.batches = new BatchWriter<T>({ sdk, name, read: (pk, id) => this.read(pk, id) });
  }

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
      const results = await this.sdk.items.executeBulkOperations(
        chunk.map((d) => ({
          operationType: 'Create' as const,
          partitionKey: d.pk,
          resourceBody: itemBody(d),
        })),
      );
      for (const r of results) {
        const statusCode = r.response?.statusCode ?? status(r.error) ?? 500;
        if (statusCode === 409) conflicts++;
        else if (statusCode >= 400) throw new StoreError(`Bulk create failed with status ${statusCode}`);
      }
    }
    if (conflicts > 0) throw new ConflictError(`${conflicts} of ${docs.length} documents already existed`);
  }

  writeBatch(pk: string, operations: readonly BatchOperation<T>[]): Promise<void> {
    return this.batches.write(pk, operations);
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
    const iterator = this.sdk.items.query<T & Resource>(spec, {
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
      return page.hasMoreResults && page.continuationToken
        ? { items, continuation: page.continuationToken }
        : { items };
    } catch (e) {
      throw mapError(e, this.name);
    }
  }

  async aggregate(q: AggregateQuery): Promise<AggregateRow[]> {
    const plan = aggregateSql(q);
    const groupBy = q.groupBy ?? [];
    const run = async <R>(spec: Parameters<SdkContainer['items']['query']>[0]) =>
      (await this.sdk.items.query<R>(spec, q.partition !== undefined ? { partitionKey: q.partition } : {}).fetchAll())
        .resources;
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
      const rowFor = (g: Record<string, JsonScalar>) => {
        const values = groupBy.map((_, i) => g[`g${i}`] ?? null);
        const key = JSON.stringify(values);
        const existing = rows.get(key);
        if (existing) return existing;
        const row: AggregateRow = {};
        groupBy.forEach((field, i) => (row[field] = values[i] ?? null));
        for (const [name, a] of Object.entries(q.aggregates))
          row[name] = a.fn === 'count' || a.fn === 'countDistinct' ? 0 : null;
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
        for (const g of await run<Record<string, JsonScalar>>(d.spec)) {
          const row = rowFor(g);
          const counted = row[d.alias];
          row[d.alias] = (typeof counted === 'number' ? counted : 0) + 1;
        }
      }
      return [...rows.values()];
    } catch (e) {
      throw mapError(e, this.name);
    }
  }

  private async write(id: string, op: () => Promise<{ resource?: (T & Resource) | undefined }>): Promise<Stored<T>> {
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
