// Analytics reads: every figure is an aggregate computed by the store (COUNT, SUM, GROUP BY, DISTINCT over
// indexed timestamps), never a scan of records in the function. One class per data source.
import { getPath } from '../store/fields.js';
import type { Aggregate, AggregateRow, Container, Doc, Filter } from '../store/types.js';
import type { Period } from './request.js';

type Where = Filter[];

/** Runs aggregates over one container, restricted to the period on its time field. */
export class Source {
  constructor(
    private readonly container: Container<Doc>,
    private readonly base: Where,
    private readonly timeField: string,
    private readonly period: Period,
  ) {}

  private where(extra: Where): Where {
    return [...this.base, { field: this.timeField, op: 'ge', value: this.period.start }, { field: this.timeField, op: 'le', value: this.period.end }, ...extra];
  }

  async one(where: Where, aggregates: Record<string, Aggregate>): Promise<AggregateRow> {
    const [row] = await this.container.aggregate({ where: this.where(where), aggregates });
    return row ?? {};
  }

  group(where: Where, groupBy: string[], aggregates: Record<string, Aggregate>): Promise<AggregateRow[]> {
    return this.container.aggregate({ where: this.where(where), groupBy, aggregates });
  }

  /** One field's values across matching documents (file sizes for a median: metadata, bounded by one agent). */
  async values<T>(where: Where, field: string): Promise<T[]> {
    const { items } = await this.container.query({ where: this.where(where) });
    return items.map((d) => getPath(d, field) as T).filter((v) => v !== undefined && v !== null);
  }

  /** Documents of one partition in the period, oldest first (per-user timelines, bounded by one user). */
  async list<T extends Doc>(partition: string, where: Where): Promise<T[]> {
    const { items } = await (this.container as unknown as Container<T>).query({ partition, where: this.where(where), orderBy: [{ field: this.timeField }] });
    return items;
  }
}

export const num = (v: unknown): number => (typeof v === 'number' ? v : 0);
export const str = (v: unknown): string => (typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : '');
export const ratio = (a: number, b: number) => (b === 0 ? 0 : Math.round((a / b) * 1000) / 1000);

export const eq = (field: string, value: string | number | boolean): Filter => ({ field, op: 'eq', value });
/** Excludes records whose field is null or empty (sessionless usage records). */
export const present = (field: string): Filter => ({ field, op: 'ne', value: '' });

export interface Sources {
  messages: Source;
  sessions: Source;
  usage: Source;
  files: Source;
  toolRuns: Source;
}

export function sources(containers: { sessions: Container<Doc>; usage: Container<Doc>; files: Container<Doc>; toolRuns: Container<Doc> }, period: Period): Sources {
  return {
    messages: new Source(containers.sessions, [eq('type', 'Message')], 'timestamp', period),
    sessions: new Source(containers.sessions, [eq('type', 'Session')], 'created_on', period),
    usage: new Source(containers.usage, [], 'timestamp', period),
    files: new Source(containers.files, [], 'created_on', period),
    toolRuns: new Source(containers.toolRuns, [], 'timestamp', period),
  };
}
