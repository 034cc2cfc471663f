// Patch operations of the embedded store, applied in turn to a parsed document: the container patches inside
// its write transaction, then writes the document whole (a new ETag, its facts with it).
import { getPath, updatePath } from './fields.js';
import { StoreError, type PatchOp } from './types.js';

export function applyPatch(doc: Record<string, unknown>, op: PatchOp): void {
  updatePath(doc, op.path, (parent, key) => {
    switch (op.op) {
      case 'set':
        parent[key] = op.value;
        return;
      case 'remove':
        Reflect.deleteProperty(parent, key);
        return;
      case 'incr': {
        const current = parent[key] ?? 0;
        if (typeof current !== 'number') throw new StoreError(`Cannot increment non-number at ${op.path}`);
        parent[key] = current + op.value;
        return;
      }
      case 'append': {
        const list = getPath(parent, key);
        if (!Array.isArray(list)) throw new StoreError(`No array at ${op.path}`);
        list.push(op.value);
        return;
      }
    }
  });
}
