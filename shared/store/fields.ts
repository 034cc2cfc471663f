// Field paths: the only way a caller names a document field. Checked here so no adapter ever splices
// caller text into a query.
import { StoreError, type FieldPath } from './types.js';

const FIELD = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;

/** Splits a dotted path into its segments; throws StoreError for anything but identifier segments. */
export function segments(path: FieldPath): string[] {
  if (!FIELD.test(path)) throw new StoreError(`Invalid field path: ${JSON.stringify(path)}`);
  return path.split('.');
}

/** Checks an alias used as an output column name. */
export function alias(name: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new StoreError(`Invalid alias: ${JSON.stringify(name)}`);
  return name;
}

type Json = Record<string, unknown>;
/** A JSON object (not an array, not null): a document, a field holding fields, a row as SQLite answers it. */
export const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Reads the value at a dotted path, or undefined. */
export function getPath(doc: unknown, path: FieldPath): unknown {
  let node: unknown = doc;
  for (const key of segments(path)) {
    if (!isObject(node)) return undefined;
    node = node[key];
  }
  return node;
}

/** Applies `update` to the parent object of a dotted path, creating intermediate objects. */
export function updatePath(doc: Json, path: FieldPath, update: (parent: Json, key: string) => void): void {
  const keys = segments(path);
  const last = keys.pop();
  if (last === undefined) throw new StoreError(`Invalid field path: ${JSON.stringify(path)}`);
  let node = doc;
  for (const key of keys) {
    const next = node[key];
    if (isObject(next)) node = next;
    else {
      const created: Json = {};
      node[key] = created;
      node = created;
    }
  }
  update(node, last);
}
