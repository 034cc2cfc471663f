// The embedded index's first pass: sign codes narrowed by Hamming distance and ranked by the query in WebAssembly,
// filtered by access key and expiry, kept in step with additions and removals, and the module built from its source.
import { describe, expect, it } from 'vitest';
import { compileKernels } from '../../../../scripts/kernels-wasm.js';
import { cosines } from '../../../../shared/knowledge/kernels.js';
import { KERNELS_WASM } from '../../../../shared/knowledge/kernels-wasm.js';
import { Sketch, signCode } from '../../../../shared/knowledge/sketch.js';

/** A seeded generator, so a failure can be run again. */
function random(seed: number) {
  let s = seed;
  return () => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return s / 2 ** 32 - 0.5;
  };
}
const vectors = (n: number, dimensions: number, seed: number) => {
  const next = random(seed);
  return Array.from({ length: n }, () => Array.from({ length: dimensions }, next));
};
/** Vectors in 30 clusters (a centre and noise), as embeddings of related texts are. */
const clustered = (n: number, dimensions: number, seed: number) => {
  const next = random(seed);
  const centres = vectors(30, dimensions, seed + 1);
  return Array.from({ length: n }, (_, i) => (centres[i % 30] as number[]).map((x) => x + next() * 0.8));
};
const everyone = { keys: undefined, now: 0 };

describe('the sketch', () => {
  it('is built from kernels.wat as committed', async () => {
    expect(await compileKernels()).toBe(KERNELS_WASM);
  });

  /** The query's dot product with a vector's sign code read as +1 and -1 per dimension. */
  const asymmetric = (q: number[], v: number[]) =>
    v.reduce((sum, x, d) => sum + (x > 0 ? 1 : -1) * (q[d] as number), 0);
  const exactTop = (all: number[][], q: number[], n: number) =>
    all
      .map((v, i) => ({ i, s: asymmetric(q, v) }))
      .sort((a, b) => b.s - a.s)
      .slice(0, n)
      .map((r) => r.i);

  it.each([24, 300, 1536])(
    'ranks a few hundred codes over %i dimensions by the query against each code, as an exhaustive ranking does',
    (dimensions) => {
      const all = clustered(600, dimensions, dimensions);
      const sketch = new Sketch(dimensions);
      all.forEach((v, i) =>
        sketch.add({ rowid: i, code: signCode(v), accessKey: '*', expiresAt: Number.MAX_SAFE_INTEGER }),
      );
      const q = all[5] as number[];
      expect(sketch.nearest(q, 20, everyone)).toEqual(exactTop(all, q, 20));
    },
  );

  it.each([
    [24, 6000],
    [1536, 6000],
    [300, 40_000],
  ])(
    'narrows thousands of codes over %i dimensions (%i of them) by Hamming distance first, keeping nearly all ' +
      'of the best',
    (dimensions, count) => {
      const all = clustered(count, dimensions, dimensions);
      const sketch = new Sketch(dimensions);
      all.forEach((v, i) =>
        sketch.add({ rowid: i, code: signCode(v), accessKey: '*', expiresAt: Number.MAX_SAFE_INTEGER }),
      );
      const next = random(7);
      for (let t = 0; t < 5; t++) {
        // A query near one of the vectors.
        const q = (all[t * 100] as number[]).map((x) => x + next() * 0.3);
        const found = sketch.nearest(q, 20, everyone);
        const exact = exactTop(all, q, 20);
        expect(found).toHaveLength(20);
        expect(found.filter((i) => exact.includes(i)).length).toBeGreaterThanOrEqual(18);
        expect(found).toContain(t * 100);
      }
    },
  );

  it('finds only codes whose access key the searcher may read and that have not expired', () => {
    const all = vectors(2000, 64, 3);
    const sketch = new Sketch(64);
    all.forEach((v, i) =>
      sketch.add({
        rowid: i,
        code: signCode(v),
        accessKey: i % 10 === 0 ? 'g:ten' : i % 2 === 0 ? '*' : 'g:other',
        expiresAt: i % 7 === 0 ? 1_000 : Number.MAX_SAFE_INTEGER,
      }),
    );
    const q = all[0] as number[];
    const found = sketch.nearest(q, 2000, { keys: new Set(['*', 'g:ten']), now: 2_000 });
    expect(found.length).toBeGreaterThan(0);
    expect(found.every((i) => i % 2 === 0 && i % 7 !== 0)).toBe(true);
    expect(new Set(found).size).toBe(all.filter((_, i) => i % 2 === 0 && i % 7 !== 0).length);
    expect(sketch.nearest(q, 5, { keys: new Set(['g:none']), now: 0 })).toEqual([]);
  });

  it('forgets removed codes, and keeps finding the rest after it has reclaimed their slots', () => {
    const all = vectors(5000, 128, 5);
    const sketch = new Sketch(128);
    all.forEach((v, i) =>
      sketch.add({ rowid: i, code: signCode(v), accessKey: '*', expiresAt: Number.MAX_SAFE_INTEGER }),
    );
    for (let i = 0; i < 5000; i += 2) sketch.remove(i);
    expect(sketch.count).toBe(2500);
    for (const t of [1, 2001, 4999]) {
      const found = sketch.nearest(all[t] as number[], 10, everyone);
      expect(found[0] === t || found.includes(t)).toBe(true);
      expect(found.every((i) => i % 2 === 1)).toBe(true);
    }
    // Written again under the same rowid: one entry, with the new code.
    sketch.add({ rowid: 1, code: signCode(all[2] as number[]), accessKey: '*', expiresAt: Number.MAX_SAFE_INTEGER });
    expect(sketch.count).toBe(2500);
    expect(sketch.nearest(all[2] as number[], 1, everyone)).toEqual([1]);
  });
});

describe('re-scoring', () => {
  it('gives the cosine similarity of stored vectors, 0 for a vector of zeros', () => {
    const [q, a, b] = vectors(3, 1537, 9) as [number[], number[], number[]];
    const stored = [a, b, new Array<number>(1537).fill(0)].map((v) => new Uint8Array(Float32Array.from(v).buffer));
    const exact = (v: number[]) =>
      v.reduce((s, x, i) => s + x * (q[i] as number), 0) / (Math.hypot(...v) * Math.hypot(...q));
    const got = cosines(q, stored);
    expect(got[0]).toBeCloseTo(exact(a), 5);
    expect(got[1]).toBeCloseTo(exact(b), 5);
    expect(got[2]).toBe(0);
    expect(cosines(q, [new Uint8Array(Float32Array.from(q).buffer)])[0]).toBeCloseTo(1, 5);
  });
});
