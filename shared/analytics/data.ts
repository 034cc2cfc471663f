// Analytics reads: every figure is an aggregate computed by the store (COUNT, SUM, GROUP BY, DISTINCT over
// indexed timestamps), never a scan of records in the function. One class per data source.
import type { UsageDoc } from '../completions/usage.js';
import type { FileDoc } from '../files/files.js';
import type { Aggregate, AggregateRow, Container, Doc, Filter, Stored } from '../store/types.js';
import type { Period } from './request.js';

type Where = Filter[];

type Readable<T extends Doc> = Pick<Container<T>, 'aggregate' | 'query'>;

/** A data source: a container, the filters that pick its records, and the time field the period applies to. */
export interface SourceOptions<T extends Doc> {
  container: Readable<T>;
  base: Where;
  timeField: string;
  period: Period;
}

/** Runs aggregates over one container, restricted to the period on its time field. */
export class Source<T extends Doc = Doc> {
  private readonly container: Readable<T>;
  private readonly base: Where;
  private readonly timeField: string;
  private readonly period: Period;

  constructor({ container, base, timeField, period }: SourceOptions<T>) {
    this.container = container;
    this.base = base;
    this.timeField = timeField;
    this.period = period;
  }

  private where(extra: Where): Where {
    return [
      ...this.base,
      { field: this.timeField, op: 'ge', value: this.period.start },
      { field: this.timeField, op: 'le', value: this.period.end },
      ...extra,
    ];
  }

  async one(where: Where, aggregates: Record<string, Aggregate>): Promise<AggregateRow> {
    const [row] = await this.container.aggregate({ where: this.where(where), aggregates });
    return row ?? {};
  }

  group(where: Where, groupBy: string[], aggregates: Record<string, Aggregate>): Promise<AggregateRow[]> {
    return this.container.aggregate({ where: this.where(where), groupBy, aggregates });
  }

  /** One field's values across matching documents (file sizes for a median: metadata, bounded by one agent). */
  async values<K extends keyof T & string>(where: Where, field: K): Promise<NonNullable<T[K]>[]> {
    const { items } = await this.container.query({ where: this.where(where) });
    const values: NonNullable<T[K]>[] = [];
    for (const d of items) {
      const v = d[field];
      if (v !== undefined && v !== null) values.push(v);
    }
    return values;
  }

  /** Documents of one partition in the period, oldest first (per-user timelines, bounded by one user). */
  async list(partition: string, where: Where): Promise<Stored<T>[]> {
    const { items } = await this.container.query({
      partition,
      where: this.where(where),
      orderBy: [{ field: this.timeField }],
    });
    return items;
  }
}

export const num = (v: unknown): number => (typeof v === 'number' ? v : 0);
export const str = (v: unknown): string =>
  typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : '';
export const ratio = (a: number, b: number) => (b === 0 ? 0 : Math.round((a / b) * 1000) / 1000);

export const eq = (field: string, value: string | number | boolean): Filter => ({ field, op: 'eq', value });
/** Excludes records whose field is null or empty (sessionless usage records). */
export const present = (field: string): Filter => ({ field, op: 'ne', value: '' });

export interface Sources {
  messages: Source;
  sessions: Source;
  usage: Source<UsageDoc>;
  files: Source<FileDoc>;
  toolRuns: Source;
}

export function sources(
  containers: { sessions: Readable<Doc>; usage: Readable<UsageDoc>; files: Readable<FileDoc>; toolRuns: Readable<Doc> },
  period: Period,
): Sources {
  return {
    messages: new Source({
      container: containers.sessions,
      base: [eq('type', 'Message')],
      timeField: 'timestamp',
      period,
    }),
    sessions: new Source({
      container: containers.sessions,
      base: [eq('type', 'Session')],
      timeField: 'created_on',
      period,
    }),
    usage: new Source({ container: containers.usage, base: [], timeField: 'timestamp', period }),
    files: new Source({ container: containers.files, base: [], timeField: 'created_on', period }),
    toolRuns: new Source({ container: containers.toolRuns, base: [], timeField: 'timestamp', period }),
  };
}
