// The parts of Node's WebAssembly API the sandbox uses, typed here: the service's build targets Node's own
// libraries, which do not describe WebAssembly.

/** A compiled module: passed to workers as it is, its machine code shared. */
export type WasmModule = object & { readonly __wasmModule?: never };

export interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow: (this: WasmMemory, pages: number) => number;
}

/** A module's imports: by module name, then by the name of the function, memory or table imported. */
export type WasmImports = Record<string, Record<string, unknown>>;

export interface WasmApi {
  Memory: { prototype: WasmMemory };
  compile(bytes: Uint8Array): Promise<WasmModule>;
  instantiate(module: unknown, imports?: WasmImports): Promise<unknown>;
}

const isWasmApi = (api: unknown): api is WasmApi =>
  typeof api === 'object' && api !== null && 'Memory' in api && 'compile' in api && 'instantiate' in api;

/** The global WebAssembly object; throws where Node has none (run with `--jitless`, for one). */
export function webAssembly(): WasmApi {
  const api: unknown = Reflect.get(globalThis, 'WebAssembly');
  if (!isWasmApi(api)) throw new Error('this Node has no WebAssembly');
  return api;
}
