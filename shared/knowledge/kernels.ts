// The embedded index's WebAssembly loops (kernels.wat): the sketch's Hamming scan, and the dot products and
// norms of re-scoring with four f32 lanes at a time. The module is compiled once; each caller instantiates it
// over its own memory.
import { elementAt } from './element-at.js';
import { KERNELS_WASM } from './kernels-wasm.js';

/** The part of Node's WebAssembly global used here (the service's type libraries do not declare it). */
export interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}
interface Wasm {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: { env: { memory: WasmMemory } }) => { exports: unknown };
  Memory: new (descriptor: { initial: number }) => WasmMemory;
}

/** Whether an object has a function under each of these names. */
const hasFunctions = (value: unknown, names: readonly string[]): boolean =>
  typeof value === 'object' && value !== null && names.every((name) => typeof Reflect.get(value, name) === 'function');

const isWasm = (value: unknown): value is Wasm => hasFunctions(value, ['Module', 'Instance', 'Memory']);

function wasmOf(global: object): Wasm {
  const api: unknown = Reflect.get(global, 'WebAssembly');
  if (!isWasm(api)) throw new Error('this Node.js has no WebAssembly');
  return api;
}
const wasm = wasmOf(globalThis);

/** A memory of one 64 KiB page, grown by ensureMemory. */
export const newMemory = (): WasmMemory => new wasm.Memory({ initial: 1 });

const kernelsModule = new wasm.Module(Buffer.from(KERNELS_WASM, 'base64'));
const PAGE = 65536;

export interface Kernels {
  /**
   * Hamming distances of `count` codes of `words64` words from `codes` to the query's, where `mask` admits, into
   * `dist`, counted in `hist`.
   */
  scan(codes: number, count: number, words64: number, query: number, mask: number, dist: number, hist: number): void;
  /** Marks in `mask` the live slots whose access key `allowed` admits and that expire after `now`; answers how many. */
  admit(
    live: number,
    access: number,
    expires: number,
    allowed: number,
    now: number,
    count: number,
    mask: number,
  ): number;
  /** The admitted slots of distance below `cut` and the first `atCut` at it, as i32 at `out`; answers how many. */
  collect(mask: number, dist: number, count: number, cut: number, atCut: number, out: number): number;
  /** For each listed slot, the sum over its code's bytes of `table[byte index * 256 + byte value]`, as f32 at `out`. */
  asymmetric(codes: number, list: number, n: number, bytes: number, table: number, out: number): void;
  /**
   * Dot product with the query and squared norm of `count` vectors of `lanes` f32x4 groups, into `out` as f32 pairs.
   */
  dots(vectors: number, count: number, lanes: number, query: number, out: number): void;
}

const isKernels = (exports: unknown): exports is Kernels =>
  hasFunctions(exports, ['scan', 'admit', 'collect', 'asymmetric', 'dots']);

/** The kernels instantiated over a memory. */
export function kernelsOver(memory: WasmMemory): Kernels {
  const { exports } = new wasm.Instance(kernelsModule, { env: { memory } });
  if (!isKernels(exports)) throw new Error('the kernels module does not export its functions');
  return exports;
}

/** Grows the memory to at least `bytes`. */
export function ensureMemory(memory: WasmMemory, bytes: number): void {
  const pages = Math.ceil(bytes / PAGE) - memory.buffer.byteLength / PAGE;
  if (pages > 0) memory.grow(pages);
}

// Re-scoring's scratch memory: searches run one at a time on the thread, so one is enough.
const scratch = newMemory();
const scratchKernels = kernelsOver(scratch);

/**
 * The cosine similarity of each stored vector (raw little-endian f32 bytes, as the index keeps them) to the
 * query; 0 where either is all zeros.
 */
export function cosines(query: ArrayLike<number>, stored: readonly Uint8Array[]): Float32Array {
  const lanes = Math.ceil(query.length / 4);
  const stride = lanes * 16;
  const out = stride;
  const vectors = out + stored.length * 8 + 16 - ((stored.length * 8) % 16);
  ensureMemory(scratch, vectors + stored.length * stride);
  const bytes = new Uint8Array(scratch.buffer);
  // Lanes past the vector's length are zeros (a length not a multiple of four).
  if (query.length % 4 !== 0) bytes.fill(0, 0, vectors + stored.length * stride);
  new Float32Array(scratch.buffer, 0, query.length).set(query);
  stored.forEach((v, i) => bytes.set(v.subarray(0, stride), vectors + i * stride));
  scratchKernels.dots(vectors, stored.length, lanes, 0, out);
  const pairs = new Float32Array(scratch.buffer, out, stored.length * 2);
  const queryNorm = Math.sqrt(Array.from(query).reduce((n, x) => n + x * x, 0));
  return Float32Array.from(stored, (_, i) => {
    const norm = elementAt(pairs, i * 2 + 1);
    return queryNorm === 0 || norm === 0 ? 0 : elementAt(pairs, i * 2) / (queryNorm * Math.sqrt(norm));
  });
}
