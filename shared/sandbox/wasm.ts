// The parts of Node's WebAssembly API the sandbox uses, typed here: the service's build targets Node's own
// libraries, which do not describe WebAssembly.

/** A compiled module: passed to workers as it is, its machine code shared. */
export type WasmModule = object & { readonly __wasmModule?: never };

export interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}

interface WasmApi {
  Memory: { prototype: WasmMemory };
  compile(bytes: Uint8Array): Promise<WasmModule>;
  instantiate(module: unknown, imports?: object): Promise<unknown>;
}

export const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;
