// Translates the typed query description into parameterized Cosmos DB SQL. Pure: no SDK here.
import type { SqlParameter, SqlQuerySpec } from '@azure/cosmos';
import { alias, segments } from './fields.js';
import type { Aggregate, AggregateQuery, Filter, Query } from './types.js';

/** `c["a"]["b"]`: bracket form, so reserved words (value, order, ...) are safe field names. */
export const ref = (path: string, root = 'c') =>
  root +
  segments(path)
    .map((s) => `["${s}"]`)
    .join('');

class Params {
  readonly list: SqlParameter[] = [];
  add(value: SqlParameter['value']): string {
    const name = `@p${this.list.length}`;
    this.list.push({ name, value });
    return name;
  }
}

function condition(f: Filter, p: Params): string {
  const field = ref(f.field);
  switch (f.op) {
    case 'eq':
      return `${field} = ${p.add(f.value)}`;
    case 'ne':
      return `${field} != ${p.add(f.value)}`;
    case 'lt':
      return `${field} < ${p.add(f.value)}`;
    case 'le':
      return `${field} <= ${p.add(f.value)}`;
    case 'gt':
      return `${field} > ${p.add(f.value)}`;
    case 'ge':
      return `${field} >= ${p.add(f.value)}`;
    case 'in':
      return `ARRAY_CONTAINS(${p.add(f.value)}, ${field})`;
    case 'startsWith':
      return `STARTSWITH(${field}, ${p.add(f.value)})`;
    case 'contains':
      return `ARRAY_CONTAINS(${field}, ${p.add(f.value)})`;
    case 'includes':
      return `CONTAINS(${field}, ${p.add(f.value)})`;
    case 'exists':
      return `IS_DEFINED(${field})`;
    case 'missing':
      return `NOT IS_DEFINED(${field})`;
  }
}

function where(partition: string | undefined, filters: readonly Filter[] | undefined, p: Params): string {
  // The partition is also filtered in SQL: some Cosmos-compatible servers ignore the partitionKey option.
  const parts = partition === undefined ? [] : [`c["pk"] = ${p.add(partition)}`];
  for (const f of filters ?? []) parts.push(condition(f, p));
  return parts.length > 0 ? ` WHERE ${parts.join(' AND ')}` : '';
}

/** `SELECT * FROM c WHERE ... ORDER BY ...` for a document query. */
export function selectSql(q: Query): SqlQuerySpec {
  const p = new Params();
  const order = (q.orderBy ?? []).map((o) => `${ref(o.field)} ${o.direction === 'desc' ? 'DESC' : 'ASC'}`);
  const orderBy = order.length > 0 ? ` ORDER BY ${order.join(', ')}` : '';
  return { query: `SELECT * FROM c${where(q.partition, q.where, p)}${orderBy}`, parameters: p.list };
}

const aggregateExpr = (a: Exclude<Aggregate, { fn: 'countDistinct' }>) =>
  a.fn === 'count' ? 'COUNT(1)' : `${a.fn.toUpperCase()}(${ref(a.field)})`;

/**
 * The queries that answer an aggregate description. Plain aggregates without grouping are one
 * `SELECT VALUE` query each (valid on every Cosmos query path); grouped ones share one GROUP BY query.
 * Count-distinct is a `SELECT DISTINCT` projection whose rows (one per distinct value, or per group and
 * value) are counted by the caller: Cosmos has no COUNT(DISTINCT).
 */
export function aggregateSql(q: AggregateQuery): {
  grouped?: SqlQuerySpec;
  values: { alias: string; spec: SqlQuerySpec }[];
  distinct: { alias: string; spec: SqlQuerySpec }[];
} {
  const groupBy = q.groupBy ?? [];
  const plain = Object.entries(q.aggregates).filter(
    (e): e is [string, Exclude<Aggregate, { fn: 'countDistinct' }>] => e[1].fn !== 'countDistinct',
  );
  const distinct = Object.entries(q.aggregates).flatMap(([name, a]) => (a.fn === 'countDistinct' ? [{ name, a }] : []));
  const groupCols = groupBy.map((g, i) => `${ref(g)} AS g${i}`);
  const result: ReturnType<typeof aggregateSql> = { values: [], distinct: [] };

  if (groupBy.length > 0 && plain.length > 0) {
    const p = new Params();
    const cols = [...groupCols, ...plain.map(([name, a]) => `${aggregateExpr(a)} AS ${alias(name)}`)];
    result.grouped = {
      query:
        `SELECT ${cols.join(', ')} FROM c${where(q.partition, q.where, p)} GROUP BY ` +
        groupBy.map((g) => ref(g)).join(', '),
      parameters: p.list,
    };
  } else {
    for (const [name, a] of plain) {
      const p = new Params();
      result.values.push({
        alias: alias(name),
        spec: { query: `SELECT VALUE ${aggregateExpr(a)} FROM c${where(q.partition, q.where, p)}`, parameters: p.list },
      });
    }
  }
  for (const { name, a } of distinct) {
    const p = new Params();
    const cols =
      groupBy.length > 0
        ? `DISTINCT ${[...groupCols, `${ref(a.field)} AS v`].join(', ')}`
        : `DISTINCT VALUE ${ref(a.field)}`;
    result.distinct.push({
      alias: alias(name),
      spec: { query: `SELECT ${cols} FROM c${where(q.partition, q.where, p)}`, parameters: p.list },
    });
  }
  return result;
}
