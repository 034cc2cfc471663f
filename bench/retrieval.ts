// Retrieval quality and speed of the embedded index at scale, on clustered synthetic vectors (the usual way to
// test an approximate index when no real embeddings are at hand): 100,000 partitions of 1,536 dimensions in
// Gaussian clusters of a few hundred, written through the index's own interface, then searched for the top
// 10 at concurrency 1 by queries drawn from the same clusters. Recall@10 is measured against an exact
// cosine ranking of the same vectors, computed here; latency against an exact cosine scan of the same
// vectors in the same file (the baseline: what the quantized first pass saves). The same with a group filter
// that keeps 10% of the partitions, and at several re-scoring depths. Ingestion against writing the same rows
// to a plain SQLite table. BENCH_RETRIEVAL_PARTITIONS sets the size (default 100,000). Then the questions the
// project's own docs label (a heading, a bold lead, a setting's name, each for its passage), answered with a
// deterministic embedder in vector and hybrid mode.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import Database from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import { mockEmbedding } from '../scripts/mock-llm.js';
import { openSqliteVectorIndex } from '../shared/knowledge/sqlite-vector-index.js';
import type { Readers, VectorIndex } from '../shared/knowledge/vector-index.js';

const DIMENSIONS = 1536;
const TOP = 10;
const PARTS_PER_DOCUMENT = 10;
/** Points per cluster on average, and how far a point strays from its centre (cosine to it about 0.75). */
const CLUSTER_SIZE = 300;
const SPREAD = Math.sqrt(0.78 / DIMENSIONS);
const QUERIES = 500;
const RECALL_QUERIES = 200;
const INDEX = 'bench-retrieval';
const TEN_PERCENT = 'group-ten-percent';
/** The deterministic embedder's length for the questions over the docs. */
const QUESTION_DIMENSIONS = 256;

/** A seeded generator (mulberry32) with Gaussian draws (Box-Muller), so every run indexes the same vectors. */
function generator(seed: number) {
  let s = seed >>> 0;
  const uniform = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const gaussian = () => Math.sqrt(-2 * Math.log(uniform() || 1e-12)) * Math.cos(2 * Math.PI * uniform());
  return { uniform, gaussian };
}

const normalize = (v: Float32Array) => {
  let n = 0;
  for (const x of v) n += x * x;
  const k = 1 / Math.sqrt(n);
  for (let i = 0; i < v.length; i++) v[i] = (v[i] as number) * k;
  return v;
};

/** Unit vectors in clusters: each a centre plus Gaussian noise, the centres themselves random. */
function clusteredVectors(
  count: number,
  seed: number,
  centres: Float32Array[],
): { vectors: Float32Array; cluster: Uint32Array } {
  const { uniform, gaussian } = generator(seed);
  const vectors = new Float32Array(count * DIMENSIONS);
  const cluster = new Uint32Array(count);
  for (let i = 0; i < count; i++) {
    const c = Math.floor(uniform() * centres.length);
    cluster[i] = c;
    const centre = centres[c] as Float32Array;
    const v = vectors.subarray(i * DIMENSIONS, (i + 1) * DIMENSIONS);
    for (let d = 0; d < DIMENSIONS; d++) v[d] = (centre[d] as number) + SPREAD * gaussian();
    normalize(v);
  }
  return { vectors, cluster };
}

/**
 * The ids of the `top` vectors most similar to q (all unit length: the dot product is the cosine), among those `admit`
 * keeps.
 */
function exactTop(vectors: Float32Array, q: Float32Array, top: number, admit: (i: number) => boolean): number[] {
  const best: { i: number; s: number }[] = [];
  const count = vectors.length / DIMENSIONS;
  for (let i = 0; i < count; i++) {
    if (!admit(i)) continue;
    let s = 0;
    const o = i * DIMENSIONS;
    for (let d = 0; d < DIMENSIONS; d++) s += (vectors[o + d] as number) * (q[d] as number);
    if (best.length < top || s > (best[best.length - 1] as { s: number }).s) {
      best.push({ i, s });
      best.sort((a, b) => b.s - a.s);
      if (best.length > top) best.pop();
    }
  }
  return best.map((b) => b.i);
}

const pct = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p))] ?? 0;
const round = (x: number, digits = 2) => Math.round(x * 10 ** digits) / 10 ** digits;
const sourceOf = (document: number) => `doc-${document}`;
/** The partition number of a hit: documents hold PARTS_PER_DOCUMENT consecutive partitions. */
const partitionOf = (hit: { source: string; id: string }) =>
  Number(hit.source.slice(4)) * PARTS_PER_DOCUMENT + Number(hit.id.split('-').pop());

export interface SearchFigures {
  recall: number;
  p50: number;
  p99: number;
}

export interface RetrievalBench {
  partitions: number;
  ingestion: { perSecond: number; baselinePerSecond: number };
  depths: { depth: number; all: SearchFigures; filtered: SearchFigures }[];
  /** The exact scan's latency (its recall is 1 by definition). */
  exact: { all: { p50: number; p99: number }; filtered: { p50: number; p99: number } };
}

export async function benchRetrieval(depths: readonly number[]): Promise<RetrievalBench> {
  const partitions = Number(process.env.BENCH_RETRIEVAL_PARTITIONS ?? 100_000);
  const documents = Math.ceil(partitions / PARTS_PER_DOCUMENT);
  const { gaussian } = generator(7);
  const centres = Array.from({ length: Math.max(1, Math.round(partitions / CLUSTER_SIZE)) }, () =>
    normalize(Float32Array.from({ length: DIMENSIONS }, gaussian)),
  );
  const { vectors } = clusteredVectors(documents * PARTS_PER_DOCUMENT, 11, centres);
  const { vectors: queries } = clusteredVectors(QUERIES, 13, centres);
  const query = (i: number) => queries.subarray(i * DIMENSIONS, (i + 1) * DIMENSIONS);
  // One document in ten is for the group alone, the rest for another group: the group's reader sees 10%.
  const inGroup = (document: number) => document % 10 === 3;

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-retrieval-'));
  try {
    // Ingestion through the index's interface, one document (ten partitions) per write.
    const index = openSqliteVectorIndex(path.join(dir, 'knowledge.db'));
    const started = performance.now();
    for (let d = 0; d < documents; d++) {
      const parts = Array.from({ length: PARTS_PER_DOCUMENT }, (_, p) => ({
        text: `partition ${p} of document ${d}`,
        vector: Array.from(
          vectors.subarray((d * PARTS_PER_DOCUMENT + p) * DIMENSIONS, (d * PARTS_PER_DOCUMENT + p + 1) * DIMENSIONS),
        ),
      }));
      await index.replaceDocument(
        INDEX,
        {
          source: sourceOf(d),
          file_name: `doc-${d}.txt`,
          title: `Document ${d}`,
          origin: 'bench',
          hash: String(d),
          allowed_groups: [inGroup(d) ? TEN_PERCENT : 'group-rest'],
        },
        parts,
      );
    }
    const perSecond = Math.round((documents * PARTS_PER_DOCUMENT) / ((performance.now() - started) / 1000));
    await index.close();
    const baselinePerSecond = plainInserts(path.join(dir, 'plain.db'), vectors, Math.min(documents, 2_000));

    // Ground truth: the exact top 10 of the recall queries, over everything and over the group's 10%.
    const truthAll = Array.from({ length: RECALL_QUERIES }, (_, i) => exactTop(vectors, query(i), TOP, () => true));
    const truthGroup = Array.from({ length: RECALL_QUERIES }, (_, i) =>
      exactTop(vectors, query(i), TOP, (p) => inGroup(Math.floor(p / PARTS_PER_DOCUMENT))),
    );

    const measure = async (search: VectorIndex, readers: Readers, truth: number[][]): Promise<SearchFigures> => {
      for (let i = 0; i < 20; i++) await search.search(INDEX, Array.from(query(i)), TOP, { readers });
      const times: number[] = [];
      let found = 0;
      for (let i = 0; i < QUERIES; i++) {
        const q = Array.from(query(i));
        const t = performance.now();
        const hits = await search.search(INDEX, q, TOP, { readers });
        times.push(performance.now() - t);
        const expected = truth[i];
        if (expected) {
          const got = new Set(hits.map(partitionOf));
          found += expected.filter((p) => got.has(p)).length;
        }
      }
      return {
        recall: round(found / (RECALL_QUERIES * TOP), 3),
        p50: round(pct(times, 0.5)),
        p99: round(pct(times, 0.99)),
      };
    };
    const figures = async (depth: number) => {
      const search = openSqliteVectorIndex(path.join(dir, 'knowledge.db'), { rescoringDepth: depth });
      try {
        return {
          all: await measure(search, 'everything', truthAll),
          filtered: await measure(search, [TEN_PERCENT], truthGroup),
        };
      } finally {
        await search.close();
      }
    };
    const measured = [];
    for (const depth of depths) measured.push({ depth, ...(await figures(depth)) });
    return {
      partitions: documents * PARTS_PER_DOCUMENT,
      ingestion: { perSecond, baselinePerSecond },
      depths: measured,
      exact: exactScan(path.join(dir, 'knowledge.db'), query),
    };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Latency of an exact cosine scan of the same partitions in the same file, without and with the group's filter. */
function exactScan(file: string, query: (i: number) => Float32Array): RetrievalBench['exact'] {
  const db = new Database(file, { readonly: true });
  sqliteVec.load(db);
  const scan = (filter: string) => {
    const statement = db.prepare(
      `SELECT rowid FROM vectors_${DIMENSIONS} WHERE index_name = ?${filter} ORDER BY ` +
        `vec_distance_cosine(embedding, ?) LIMIT ${TOP}`,
    );
    const times: number[] = [];
    for (let i = 0; i < 30; i++) {
      const q = query(i);
      const t = performance.now();
      statement.all(INDEX, Buffer.from(q.buffer, q.byteOffset, q.byteLength));
      times.push(performance.now() - t);
    }
    return { p50: round(pct(times, 0.5)), p99: round(pct(times, 0.99)) };
  };
  const group = db
    .prepare(`SELECT access_key FROM access_sets WHERE index_name = ? AND group_id = ?`)
    .get(INDEX, TEN_PERCENT) as { access_key: string };
  const figures = { all: scan(''), filtered: scan(` AND access = '${group.access_key}'`) };
  db.close();
  return figures;
}

/** Rows a second written to a plain SQLite table (rowid, text, float32 blob), a document's rows per transaction. */
function plainInserts(file: string, vectors: Float32Array, documents: number): number {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.exec('CREATE TABLE plain (id INTEGER PRIMARY KEY, text TEXT, embedding BLOB)');
  const insert = db.prepare('INSERT INTO plain (text, embedding) VALUES (?, ?)');
  const write = db.transaction((d: number) => {
    for (let p = 0; p < PARTS_PER_DOCUMENT; p++) {
      const v = vectors.subarray(
        (d * PARTS_PER_DOCUMENT + p) * DIMENSIONS,
        (d * PARTS_PER_DOCUMENT + p + 1) * DIMENSIONS,
      );
      insert.run(`partition ${p} of document ${d}`, Buffer.from(v.buffer, v.byteOffset, v.byteLength));
    }
  });
  const started = performance.now();
  for (let d = 0; d < documents; d++) write(d);
  const perSecond = Math.round((documents * PARTS_PER_DOCUMENT) / ((performance.now() - started) / 1000));
  db.close();
  return perSecond;
}

/** A passage of the project's own docs, and the question that labels it (when it has one). */
interface Passage {
  file: string;
  text: string;
  question?: string;
}

/**
 * The docs cut into passages (paragraphs, list items, table rows), each labelled passage with the question
 * its own structure asks of it: a section's heading asks for its first paragraph, a list item's bold lead
 * for the item, a table row's first cell ("What is `X`?") for the row.
 */
function docPassages(root: string): Passage[] {
  const files = [
    'README.md',
    ...fs
      .readdirSync(path.join(root, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => `docs/${f}`),
  ];
  const passages: Passage[] = [];
  for (const file of files) {
    let heading: string | undefined;
    const blocks = fs.readFileSync(path.join(root, file), 'utf8').split(/\n(?=\s*(?:[*-] |\| |#{1,6} ))|\n\s*\n/);
    for (const raw of blocks) {
      const text = raw.trim();
      if (text === '' || /^\|[\s:|-]+\|?$/.test(text) || text.startsWith('```')) continue;
      const title = /^#{1,6} (.+)$/.exec(text);
      if (title) {
        heading = title[1];
        continue;
      }
      const bold = /^[*-] \*\*([^*]+?)\.?\*\*/.exec(text)?.[1];
      const cell = /^\| `([^`]+)`/.exec(text)?.[1];
      const question = heading
        ? `${heading}?`
        : bold
          ? `What about ${bold.toLowerCase()}?`
          : cell
            ? `What is ${cell}?`
            : undefined;
      heading = undefined;
      passages.push({ file, text, ...(question ? { question } : {}) });
    }
  }
  return passages;
}

export interface QuestionsBench {
  questions: number;
  passages: number;
  /** Share of questions whose passage is among the top 5, by mode. */
  vector: number;
  hybrid: number;
}

/** The labelled questions over the docs, answered by the embedded index with a deterministic embedder. */
export async function benchDocQuestions(root: string): Promise<QuestionsBench> {
  const passages = docPassages(root);
  const labelled = passages.map((p, i) => ({ ...p, id: i })).filter((p) => p.question !== undefined);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-questions-'));
  const index = openSqliteVectorIndex(path.join(dir, 'knowledge.db'));
  try {
    for (const [i, p] of passages.entries()) {
      await index.replaceDocument(
        'docs',
        { source: `passage-${i}`, file_name: p.file, title: p.file, origin: 'bench', hash: String(i) },
        [{ text: p.text, vector: mockEmbedding(p.text, QUESTION_DIMENSIONS) }],
      );
    }
    const share = async (mode: 'vector' | 'hybrid') => {
      let found = 0;
      for (const p of labelled) {
        const question = p.question as string;
        const hits = await index.search('docs', mockEmbedding(question, QUESTION_DIMENSIONS), 5, {
          readers: 'everything',
          mode,
          text: question,
        });
        if (hits.some((h) => h.source === `passage-${p.id}`)) found++;
      }
      return round(found / labelled.length, 3);
    };
    return {
      questions: labelled.length,
      passages: passages.length,
      vector: await share('vector'),
      hybrid: await share('hybrid'),
    };
  } finally {
    await index.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
