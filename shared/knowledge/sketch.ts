// The in-memory first pass of the embedded index: one bit per dimension of every partition (its sign, so the
// Hamming distance between two codes estimates the angle between their vectors), kept per index and vector
// length beside where each partition may be read and until when. A search narrows in two steps before the
// exact re-scoring its caller does: the Hamming distance (a WebAssembly scan, kernels.wat) over each whole
// code, or past 32,768 codes over 256 of its bits (words spread over the vector), keeps the closest thousand
// or more; then the query's own values rank those (its dot product with each code read as +1 and -1 per
// dimension, summed a byte at a time from a table of the query), which orders them far closer to the exact
// ranking than bits against bits. 100,000 partitions of 1,536 dimensions take 22 MiB here;
// `npm run bench -- knowledge` measures the search's recall and latency.
import { elementAt } from './element-at.js';
import { ensureMemory, kernelsOver, newMemory, type Kernels } from './kernels.js';

/** A code's words of 32 bits; bit d of the code is dimension d's sign. */
export const wordsOf = (dimensions: number) => Math.ceil(dimensions / 32);

/** The sign code of a vector: bit d set when dimension d is positive. */
export function signCode(vector: ArrayLike<number>): Uint32Array {
  const code = new Uint32Array(wordsOf(vector.length));
  for (let d = 0; d < vector.length; d++)
    if (elementAt(vector, d) > 0) code[d >>> 5] = (elementAt(code, d >>> 5) | (1 << (d & 31))) >>> 0;
  return code;
}

/** 32-bit words of each code's lead (256 bits): the whole code when shorter, zero-padded. */
const LEAD_WORDS = 8;
/** The lead step keeps at least this many, and eight times what the whole code keeps. */
const MIN_LEAD_KEPT = 1000;
/** Indexes (as a searcher may read them) up to this size are narrowed by whole codes, not their leads. */
const WHOLE_SCAN_LIMIT = 32_768;
const LEAD_FACTOR = 8;

export interface Admission {
  /** The access keys the searcher may read; undefined: every key. */
  keys: ReadonlySet<string> | undefined;
  /** Epoch milliseconds: partitions expiring at or before it are not found. */
  now: number;
}

/** Most distinct access keys in one sketch (a byte each in the scan's table of allowed keys). */
const MAX_KEYS = 65536;

/** Where each region of a sketch's memory starts, for a capacity (every region aligned for its element). */
function layoutFor(capacity: number, codeWords: number) {
  const align = (at: number, to: number) => Math.ceil(at / to) * to;
  const leads = 0;
  const codes = leads + capacity * LEAD_WORDS * 4;
  const expires = align(codes + capacity * codeWords * 4, 8);
  const access = expires + capacity * 8;
  const live = access + capacity * 2;
  const mask = live + capacity;
  const dist = align(mask + capacity, 4);
  const list = dist + capacity * 4;
  const hist = list + capacity * 4;
  // Room for a histogram of whole-code distances, the longer kind.
  const query = align(hist + (codeWords * 32 + 1) * 4, 8);
  const table = query + codeWords * 4;
  const scores = table + codeWords * 4 * 256 * 4;
  const allowed = scores + capacity * 4;
  return {
    leads,
    codes,
    expires,
    access,
    live,
    mask,
    dist,
    list,
    hist,
    query,
    table,
    scores,
    allowed,
    end: allowed + MAX_KEYS,
  };
}

/** One partition as the sketch holds it: its rowid, sign code, access key and expiry (epoch milliseconds). */
export interface SketchEntry {
  rowid: number;
  code: Uint32Array;
  accessKey: string;
  expiresAt: number;
}

export class Sketch {
  /** 32-bit words of a code, rounded up to whole 64-bit words for the scan. */
  private readonly codeWords: number;
  /** Which words of a code make its lead. */
  private readonly lead: Int32Array;
  private size = 0;
  private dead = 0;
  private capacity = 0;
  private readonly rowids: number[] = [];
  private readonly slotOf = new Map<number, number>();
  private readonly keys: string[] = [];
  private readonly keyIds = new Map<string, number>();
  // Everything the scan reads lives in its memory: the leads, whole codes, expiry, access key and liveness of
  // each slot, and the scratch regions of a search.
  private memory = newMemory();
  private kernels: Kernels = kernelsOver(this.memory);
  private layout = layoutFor(0, 2);

  constructor(readonly dimensions: number) {
    const words = wordsOf(dimensions);
    this.codeWords = words + (words % 2);
    const step = words / LEAD_WORDS;
    this.lead =
      words > LEAD_WORDS
        ? Int32Array.from({ length: LEAD_WORDS }, (_, i) => Math.floor(i * step))
        : Int32Array.from({ length: words }, (_, i) => i);
    this.grow(256);
  }

  /** Partitions held. */
  get count(): number {
    return this.size - this.dead;
  }

  add({ rowid, code, accessKey, expiresAt }: SketchEntry): void {
    if (code.length !== wordsOf(this.dimensions))
      throw new RangeError(`a code of ${code.length} words in a sketch of ${this.dimensions} dimensions`);
    this.remove(rowid);
    if (this.size === this.capacity) this.grow(this.capacity * 2);
    const slot = this.size++;
    const { buffer } = this.memory;
    const l = this.layout;
    this.rowids[slot] = rowid;
    const whole = new Uint32Array(buffer, l.codes + slot * this.codeWords * 4, this.codeWords);
    whole.fill(0);
    whole.set(code);
    const leads = new Uint32Array(buffer, l.leads + slot * LEAD_WORDS * 4, LEAD_WORDS);
    leads.fill(0);
    this.lead.forEach((w, i) => (leads[i] = elementAt(code, w)));
    new Float64Array(buffer, l.expires, this.capacity)[slot] = expiresAt;
    new Uint16Array(buffer, l.access, this.capacity)[slot] = this.keyId(accessKey);
    new Uint8Array(buffer, l.live, this.capacity)[slot] = 1;
    this.slotOf.set(rowid, slot);
  }

  remove(rowid: number): void {
    const slot = this.slotOf.get(rowid);
    if (slot === undefined) return;
    this.slotOf.delete(rowid);
    new Uint8Array(this.memory.buffer, this.layout.live, this.capacity)[slot] = 0;
    this.dead++;
    // Removed slots are reclaimed once they are half of what is held.
    if (this.dead > 1024 && this.dead * 2 > this.size) this.compact();
  }

  /**
   * The rowids of the `count` partitions whose codes best match the vector, best first, among those the
   * searcher may read: all of them when there are no more than that.
   */
  nearest(vector: ArrayLike<number>, count: number, { keys, now }: Admission): number[] {
    const { buffer } = this.memory;
    const l = this.layout;
    const allowed = new Uint8Array(buffer, l.allowed, this.keys.length);
    this.keys.forEach((k, i) => (allowed[i] = keys === undefined || keys.has(k) ? 1 : 0));
    const admitted = this.kernels.admit(l.live, l.access, l.expires, l.allowed, now, this.size, l.mask);
    // Every admitted slot goes to the second step when there are few: a cut past any distance.
    let limit = { cut: 0x10000, atCut: 0 };
    const keep = Math.max(MIN_LEAD_KEPT, count * LEAD_FACTOR);
    if (admitted > keep) {
      // Up to WHOLE_SCAN_LIMIT codes are compared whole (a millisecond or so); past it, by their leads.
      const whole = admitted <= WHOLE_SCAN_LIMIT;
      const words = whole ? this.codeWords : LEAD_WORDS;
      const code = signCode(vector);
      const query = new Uint32Array(buffer, l.query, words);
      query.fill(0);
      if (whole) query.set(code);
      else this.lead.forEach((w, i) => (query[i] = elementAt(code, w)));
      const histogram = new Uint32Array(buffer, l.hist, words * 32 + 1);
      histogram.fill(0);
      this.kernels.scan(whole ? l.codes : l.leads, this.size, words / 2, l.query, l.mask, l.dist, l.hist);
      limit = cutOff(histogram, keep);
    }
    const kept = this.kernels.collect(l.mask, l.dist, this.size, limit.cut, limit.atCut, l.list);
    const pool = new Int32Array(buffer, l.list, kept);
    if (kept <= count) return Array.from(pool, (s) => elementAt(this.rowids, s));
    this.fillTable(vector, new Float32Array(buffer, l.table, this.codeWords * 4 * 256));
    this.kernels.asymmetric(l.codes, l.list, kept, this.codeWords * 4, l.table, l.scores);
    const scores = new Float32Array(buffer, l.scores, kept);
    const order = Array.from(pool.keys()).sort((a, b) => elementAt(scores, b) - elementAt(scores, a));
    return order.slice(0, count).map((i) => elementAt(this.rowids, elementAt(pool, i)));
  }

  /**
   * For each byte of a code, what each of its 256 values adds to the query's dot product with the code read
   * as +1 and -1 per dimension: built from the value without its lowest set bit.
   */
  private fillTable(vector: ArrayLike<number>, table: Float32Array): void {
    const at = (d: number) => (d < vector.length ? elementAt(vector, d) : 0);
    for (let j = 0; j < this.codeWords * 4; j++) {
      const row = j * 256;
      let none = 0;
      for (let k = 0; k < 8; k++) none -= at(j * 8 + k);
      table[row] = none;
      for (let v = 1; v < 256; v++)
        table[row + v] = elementAt(table, row + (v & (v - 1))) + 2 * at(j * 8 + (31 - Math.clz32(v & -v)));
    }
  }

  private keyId(key: string): number {
    let id = this.keyIds.get(key);
    if (id === undefined) {
      id = this.keys.length;
      if (id >= MAX_KEYS) throw new RangeError(`more than ${MAX_KEYS} distinct reader sets in one index`);
      this.keys.push(key);
      this.keyIds.set(key, id);
    }
    return id;
  }

  /** Moves the slots into a memory laid out for the new capacity. */
  private grow(capacity: number): void {
    const from = this.layout;
    const to = layoutFor(capacity, this.codeWords);
    const memory = newMemory();
    ensureMemory(memory, to.end);
    const copy = (fromAt: number, toAt: number, bytes: number) =>
      new Uint8Array(memory.buffer, toAt, bytes).set(new Uint8Array(this.memory.buffer, fromAt, bytes));
    copy(from.leads, to.leads, this.size * LEAD_WORDS * 4);
    copy(from.codes, to.codes, this.size * this.codeWords * 4);
    copy(from.expires, to.expires, this.size * 8);
    copy(from.access, to.access, this.size * 2);
    copy(from.live, to.live, this.size);
    this.memory = memory;
    this.kernels = kernelsOver(memory);
    this.layout = to;
    this.capacity = capacity;
  }

  private compact(): void {
    const { buffer } = this.memory;
    const l = this.layout;
    const live = new Uint8Array(buffer, l.live, this.capacity);
    const regions = [
      { array: new Uint32Array(buffer, l.leads, this.capacity * LEAD_WORDS), per: LEAD_WORDS },
      { array: new Uint32Array(buffer, l.codes, this.capacity * this.codeWords), per: this.codeWords },
      { array: new Float64Array(buffer, l.expires, this.capacity), per: 1 },
      { array: new Uint16Array(buffer, l.access, this.capacity), per: 1 },
    ];
    let to = 0;
    for (let from = 0; from < this.size; from++) {
      if (live[from] !== 1) continue;
      if (to !== from) {
        for (const { array, per } of regions) array.copyWithin(to * per, from * per, (from + 1) * per);
        const rowid = elementAt(this.rowids, from);
        this.rowids[to] = rowid;
        live[to] = 1;
        this.slotOf.set(rowid, to);
      }
      to++;
    }
    live.fill(0, to, this.size);
    this.rowids.length = to;
    this.size = to;
    this.dead = 0;
  }
}

/** The distance at which `count` are reached, and how many of those at it to take (the rest are closer). */
function cutOff(histogram: Uint32Array, count: number): { cut: number; atCut: number } {
  let cut = 0;
  let below = 0;
  while (cut < histogram.length - 1 && below + elementAt(histogram, cut) < count) below += elementAt(histogram, cut++);
  return { cut, atCut: count - below };
}
