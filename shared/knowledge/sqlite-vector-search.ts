// Searches of the embedded vector index: the sign codes of the index's sketch narrow its partitions to
// candidates, ranked by the cosine of their full vectors; a search filtered by source or file name ranks
// that document's few partitions exactly. A hybrid search fuses that ranking with the full text's BM25
// ranking by reciprocal rank. Only partitions of the access keys the readers' groups admit are found.
import { elementAt } from './element-at.js';
import { cosines } from './kernels.js';
import type { Admission } from './sketch.js';
import { EVERYONE, type VectorFile } from './sqlite-vector-file.js';
import type { SketchCache } from './sqlite-vector-sketches.js';
import { columnValues, rowsOf, type RowOf } from './sqlite-rows.js';
import {
  clauseValues,
  readerGroups,
  RRF_K,
  searchTerms,
  sourceKey,
  type SearchHit,
  type SearchOptions,
} from './vector-index.js';

/** Candidates the sign codes hand to exact re-scoring: at least this many, and `rescoringDepth` per result. */
const MIN_CANDIDATES = 100;

/** A partition as a search answers it. */
const ROW = {
  rowid: 'integer',
  source: 'text',
  file_name: 'text',
  part: 'integer',
  title: 'text',
  text: 'text',
} as const;
interface Scored {
  rowid: number;
  score: number;
}

/** One search: the `top` partitions of an index nearest the vector. */
export interface SearchRequest {
  index: string;
  vector: readonly number[];
  top: number;
  options: SearchOptions;
}

/** Where the nearest partitions are looked for: an index's vector table, filtered by field and access key. */
interface Scope {
  table: string;
  index: string;
  vector: readonly number[];
  /** The values the filter asks for, by column. */
  values: Record<string, string>;
  /** The access keys the readers may read; undefined: all. */
  keys: string[] | undefined;
}

/** The search of an index file; `depth`: candidates per result the sign codes hand to exact re-scoring. */
export function vectorSearch(
  file: VectorFile,
  sketches: SketchCache,
  depth: number,
): (request: SearchRequest) => SearchHit[] {
  const { db, statement, vectorTable } = file;
  const keysOf = db.prepare<[string, string], { access_key: string }>(
    `SELECT DISTINCT access_key FROM access_sets WHERE index_name = ? AND group_id IN (SELECT value FROM json_each(?))`,
  );

  /** The access keys readers may read, or undefined for every key. */
  function readable(index: string, options: SearchOptions): string[] | undefined {
    const readers = options.readers ?? [];
    if (readers === 'everything') return undefined;
    const groups = readerGroups(readers);
    return [EVERYONE, ...(groups.length > 0 ? keysOf.all(index, JSON.stringify(groups)).map((r) => r.access_key) : [])];
  }

  /** Full rows of these partitions, in the order given. */
  function partitionsOf(table: string, rowids: readonly number[]): RowOf<typeof ROW>[] {
    const rows = rowsOf(
      ROW,
      statement(
        `SELECT rowid, source, file_name, part, title, text FROM ${table} WHERE rowid IN (SELECT value FROM ` +
          `json_each(?))`,
      ).all(JSON.stringify(rowids)),
    );
    const byId = new Map(rows.map((r) => [r.rowid, r]));
    return rowids.map((id) => byId.get(id)).filter((r) => r !== undefined);
  }

  /** The partitions ranked by the cosine of their full vectors to the query, best first. */
  function rescore(table: string, vector: readonly number[], rowids: readonly number[]): Scored[] {
    const read = statement(`SELECT embedding FROM ${table} WHERE rowid = ?`).pluck();
    const found: number[] = [];
    const embeddings: Buffer[] = [];
    for (const rowid of [...rowids].sort((a, b) => a - b)) {
      const embedding = read.get(rowid);
      if (!Buffer.isBuffer(embedding)) continue;
      found.push(rowid);
      embeddings.push(embedding);
    }
    const scores = cosines(vector, embeddings);
    return found.map((rowid, i) => ({ rowid, score: elementAt(scores, i) })).sort((a, b) => b.score - a.score);
  }

  function search({ index, vector, top, options }: SearchRequest): SearchHit[] {
    const values = clauseValues(options.filter);
    const table = values && vectorTable(vector.length);
    if (!values || !table || top <= 0) return [];
    const keys = readable(index, options);
    const terms = options.mode === 'hybrid' ? searchTerms(options.text ?? '') : [];
    const pool = terms.length > 0 ? Math.max(20, top * 2) : top;
    const byVector = nearest({ table, index, vector, values, keys }, pool);
    if (terms.length === 0) return hitsOf(table, byVector);
    // Hybrid: twice the results asked for from each ranking (at least 20), fused by reciprocal rank.
    const where =
      Object.keys(values)
        .map((field) => ` AND ${field} = ?`)
        .join('') + (keys ? ' AND access IN (SELECT value FROM json_each(?))' : '');
    const byText = statement(
      `SELECT rowid FROM fulltext WHERE fulltext MATCH ? AND index_name = ? AND expires_at > ? AND dimensions ` +
        `= ?${where} ORDER BY rank LIMIT ?`,
    )
      .pluck()
      .all(
        terms.map((t) => `"${t.replace(/"/g, '""')}"`).join(' OR '),
        index,
        BigInt(Date.now()),
        vector.length,
        ...Object.values(values),
        ...(keys ? [JSON.stringify(keys)] : []),
        pool,
      );
    const fused = new Map<number, number>();
    byVector.forEach((r, i) => fused.set(r.rowid, (fused.get(r.rowid) ?? 0) + 1 / (RRF_K + i + 1)));
    columnValues('integer', byText).forEach((rowid, i) =>
      fused.set(rowid, (fused.get(rowid) ?? 0) + 1 / (RRF_K + i + 1)),
    );
    const chosen = [...fused]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([rowid]) => rowid);
    const scores = new Map(byVector.map((r) => [r.rowid, r.score]));
    const unscored = chosen.filter((id) => !scores.has(id));
    for (const r of unscored.length > 0 ? rescore(table, vector, unscored) : []) scores.set(r.rowid, r.score);
    return hitsOf(
      table,
      chosen.map((rowid) => ({ rowid, score: scores.get(rowid) ?? 0 })),
    );
  }

  /** The `top` partitions of the scope nearest its vector, best first with their cosine similarity. */
  function nearest({ table, index, vector, values, keys }: Scope, top: number): Scored[] {
    const now = Date.now();
    const filtered = Object.keys(values);
    if (filtered.length > 0) {
      // A source or file name: that document's partitions, ranked exactly.
      const where =
        filtered.map((field) => ` AND ${field} = ?`).join('') +
        (keys ? ' AND access IN (SELECT value FROM json_each(?))' : '');
      const rowids = columnValues(
        'integer',
        statement(`SELECT rowid FROM ${table} WHERE index_name = ? AND expires_at > ?${where}`)
          .pluck()
          .all(index, BigInt(now), ...Object.values(values), ...(keys ? [JSON.stringify(keys)] : [])),
      );
      return rescore(table, vector, rowids).slice(0, top);
    }
    const admission: Admission = { keys: keys ? new Set(keys) : undefined, now };
    const sketch = sketches.load(table, vector.length, index);
    const candidates = sketch.nearest(vector, Math.max(MIN_CANDIDATES, top * depth), admission);
    return rescore(table, vector, candidates).slice(0, top);
  }

  function hitsOf(table: string, scored: readonly Scored[]): SearchHit[] {
    const scores = new Map(scored.map((s) => [s.rowid, s.score]));
    return partitionsOf(
      table,
      scored.map((s) => s.rowid),
    ).map((r) => ({
      id: `${sourceKey(r.source)}-${r.part}`,
      source: r.source,
      file_name: r.file_name,
      title: r.title,
      text: r.text,
      score: scores.get(r.rowid) ?? 0,
    }));
  }

  return search;
}
