// The SQL of the embedded store's reads: the conditions of a query's filters, the SELECT of a page of
// documents, and aggregates, which read the facts table where it holds every field they name (its covering
// index answers them without a document visited). It builds statements and their parameters; the
// container runs them.
import { alias, segments } from './fields.js';
import { jsonExpr, TYPE_NAME, typeIs, type ContainerTables } from './sqlite-schema.js';
import {
  StoreError,
  type AggregateQuery,
  type AggregateRow,
  type Filter,
  type JsonScalar,
  type Query,
} from './types.js';

export type Bind = string | number | null;
export const bind = (v: JsonScalar): Bind => (typeof v === 'boolean' ? (v ? 1 : 0) : v);

/** What a container's reads run over: its tables, and whether its documents expire (then skipped once expired). */
export interface QueryTarget extends ContainerTables {
  ttl: boolean;
}

/** Operators a facts column answers like the document; the others look inside values. */
const COLUMN_OPS = new Set<Filter['op']>(['eq', 'ne', 'lt', 'le', 'gt', 'ge', 'in', 'startsWith', 'includes']);

/** A field the facts table was checked to hold and does not: the check and the table disagree. */
const unreachable = (field: string): never => {
  throw new StoreError(`The facts table has no column for ${field}`);
};

/** Where an aggregate reads its fields: the documents, or the container's facts table. */
interface AggregateSource {
  table: string;
  column: (field: string) => string;
  /** Whether SQLite scans a covering index for a GROUP BY over it (not over expressions). */
  columns: boolean;
}

/** The rows a read selects: of one partition or all, matching every filter. */
interface Selection {
  partition: string | undefined;
  filters: readonly Filter[] | undefined;
  /** How a filter reads a field: from the document unless given. */
  column?: (field: string) => string;
}

/** A page of documents in the query's order, its LIMIT and OFFSET left as the last two parameters. */
export function selectSql(target: QueryTarget, q: Query): { sql: string; params: Bind[] } {
  const params: Bind[] = [];
  const whereSql = where(target, { partition: q.partition, filters: q.where }, params);
  const order = (q.orderBy ?? []).map((o) => `${jsonExpr(o.field)} ${o.direction === 'desc' ? 'DESC' : 'ASC'}`);
  const orderBy = [...order, 'pk', 'id'].join(', ');
  const sql = `SELECT body, etag FROM "${target.table}"${whereSql} ORDER BY ${orderBy} LIMIT ? OFFSET ?`;
  return { sql, params };
}

/** The facts table when it holds every field the aggregate reads, else the documents. */
function aggregateSource(target: QueryTarget, q: AggregateQuery): AggregateSource {
  const facts = target.facts;
  const fields = [
    ...(q.where ?? []).map((f) => f.field),
    ...(q.groupBy ?? []),
    ...Object.values(q.aggregates).flatMap((a) => ('field' in a ? [a.field] : [])),
  ];
  if (facts && fields.every((f) => facts.columns.has(f)) && (q.where ?? []).every((f) => COLUMN_OPS.has(f.op))) {
    const column = (f: string) => facts.columns.get(f) ?? unreachable(f);
    return { table: facts.table, column, columns: true };
  }
  return { table: target.table, column: jsonExpr, columns: false };
}

/**
 * Aggregates over the facts table scan its covering index. Over the documents, grouped aggregates first
 * select the fields into a materialized row set: SQLite would fetch every document for a GROUP BY over
 * expressions.
 */
export function aggregateSql(
  target: QueryTarget,
  q: AggregateQuery,
): { sql: string; params: Bind[]; shape: (r: Record<string, JsonScalar>) => AggregateRow } {
  const params: Bind[] = [];
  const groupBy = q.groupBy ?? [];
  const source = aggregateSource(target, q);
  const whereSql = where(target, { partition: q.partition, filters: q.where, column: source.column }, params);
  const aggregates = Object.entries(q.aggregates);
  const call = (a: (typeof aggregates)[number][1], value: string) =>
    a.fn === 'count'
      ? 'COUNT(*)'
      : a.fn === 'countDistinct'
        ? `COUNT(DISTINCT ${value})`
        : `${a.fn.toUpperCase()}(${value})`;
  const results = aggregates.map(
    ([name, a]) => `${call(a, 'field' in a ? source.column(a.field) : '')} AS "${alias(name)}"`,
  );
  let sql: string;
  if (groupBy.length === 0) {
    sql = `SELECT ${results.join(', ')} FROM "${source.table}"${whereSql}`;
  } else if (source.columns) {
    const keys = groupBy.map((g, i) => `${source.column(g)} AS g${i}`);
    const groups = groupBy.map((_, i) => `g${i}`).join(', ');
    sql = `SELECT ${[...keys, ...results].join(', ')} FROM "${source.table}"${whereSql} GROUP BY ${groups}`;
  } else {
    const inner = [
      ...groupBy.map((g, i) => `${jsonExpr(g)} AS g${i}`),
      ...aggregates.map(([, a], i) => ('field' in a ? `${jsonExpr(a.field)} AS a${i}` : `1 AS a${i}`)),
    ];
    const outer = [
      ...groupBy.map((_, i) => `g${i}`),
      ...aggregates.map(([name, a], i) => `${call(a, `a${i}`)} AS "${alias(name)}"`),
    ];
    const keys = groupBy.map((_, i) => `g${i}`).join(', ');
    const rows = `SELECT ${inner.join(', ')} FROM "${target.table}"${whereSql}`;
    sql = `WITH r AS MATERIALIZED (${rows}) SELECT ${outer.join(', ')} FROM r GROUP BY ${keys}`;
  }
  return {
    sql,
    params,
    shape: (r) => {
      const out: AggregateRow = {};
      groupBy.forEach((g, i) => (out[g] = r[`g${i}`] ?? null));
      for (const name of Object.keys(q.aggregates)) out[name] = r[name] ?? null;
      return out;
    },
  };
}

/** The WHERE clause of a selection (empty when it selects every row), its parameters added to `params`. */
function where(target: QueryTarget, selection: Selection, params: Bind[]): string {
  const parts: string[] = [];
  if (target.ttl) {
    parts.push('(expires_at IS NULL OR expires_at > ?)');
    params.push(Date.now());
  }
  if (selection.partition !== undefined) {
    parts.push('pk = ?');
    params.push(selection.partition);
  }
  const column = selection.column ?? jsonExpr;
  for (const f of selection.filters ?? []) parts.push(sqliteCondition(f, params, column));
  return parts.length > 0 ? ` WHERE ${parts.join(' AND ')}` : '';
}

function sqliteCondition(f: Filter, params: Bind[], column: (field: string) => string): string {
  const field = column(f.field);
  if (f.op === 'eq' && f.field === 'type' && typeof f.value === 'string' && TYPE_NAME.test(f.value))
    return typeIs(f.value, field);
  const ops = { eq: '=', ne: '!=', lt: '<', le: '<=', gt: '>', ge: '>=' } as const;
  switch (f.op) {
    case 'eq':
    case 'ne':
    case 'lt':
    case 'le':
    case 'gt':
    case 'ge':
      params.push(bind(f.value));
      return `${field} ${ops[f.op]} ?`;
    case 'in':
      if (f.value.length === 0) return '0';
      params.push(...f.value.map(bind));
      return `${field} IN (${f.value.map(() => '?').join(', ')})`;
    case 'startsWith':
      params.push(f.value.length, f.value);
      return `substr(${field}, 1, ?) = ?`;
    case 'includes':
      params.push(f.value);
      return `instr(${field}, ?) > 0`;
    case 'contains':
      params.push(bind(f.value));
      return `EXISTS (SELECT 1 FROM json_each(body, '$.${segments(f.field).join('.')}') WHERE value = ?)`;
    case 'exists':
      return `json_type(body, '$.${segments(f.field).join('.')}') IS NOT NULL`;
    case 'missing':
      return `json_type(body, '$.${segments(f.field).join('.')}') IS NULL`;
  }
}
