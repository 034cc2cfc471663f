// Moves documents written under an earlier key scheme to the current one, once per store (a marker document
// records the schema version). Version 2 case-folds keys: resource ids are case-folded names, access tokens
// are keyed by the agent's resource id, users' data by the case-folded UPN, and async operations by owner.
import { operationKey } from './completions/operations.js';
import { META_PK } from './store/stored-key.js';
import { ConflictError, type Container, type Doc, type DocumentStore } from './store/types.js';

const SCHEMA_VERSION = 2;
const MARKER = { pk: META_PK, id: 'schema' };

type Any = Doc & Record<string, unknown>;

/** Every document of a container whose key `rekey` changes, read before anything is moved. */
async function pending(container: Container<Any>, rekey: (doc: Any) => Any | undefined): Promise<[Any, Any][]> {
  const moves: [Any, Any][] = [];
  let continuation: string | undefined;
  do {
    const page = await container.query({ limit: 500, ...(continuation ? { continuation } : {}) });
    for (const doc of page.items) {
      if (doc.pk === MARKER.pk) continue;
      const next = rekey(doc);
      if (next && (next.pk !== doc.pk || next.id !== doc.id)) moves.push([doc, next]);
    }
    continuation = page.continuation;
  } while (continuation);
  return moves;
}

async function move(container: Container<Any>, rekey: (doc: Any) => Any | undefined): Promise<number> {
  const moves = await pending(container, rekey);
  for (const [from, to] of moves) {
    const { _etag: _e, ...body } = to as Any & { _etag?: string };
    try {
      await container.create(body);
    } catch (e) {
      // Already moved by another instance migrating at the same time.
      if (!(e instanceof ConflictError)) throw e;
    }
    await container.delete(from.pk, from.id);
  }
  return moves.length;
}

const lower = (v: unknown) => (typeof v === 'string' ? v.toLowerCase() : v);

/** Case-folds the owner fields of a user's document. */
const byOwner = (doc: Any): Any => ({ ...doc, pk: doc.pk.toLowerCase(), ...(typeof doc.upn === 'string' ? { upn: lower(doc.upn) } : {}) });

/** Brings the store to the current schema; cheap (one read) once it is there. */
export async function migrate(store: DocumentStore, log: (message: string) => void = () => undefined): Promise<void> {
  const resources = store.container<Any>('resources');
  const marker = await resources.read(MARKER.pk, MARKER.id);
  if (typeof marker?.version === 'number' && marker.version >= SCHEMA_VERSION) return;
  const moved = [
    await move(resources, (d) => ({ ...d, id: d.id.toLowerCase() })),
    await move(store.container<Any>('tokens'), (d) => ({ ...d, pk: d.pk.toLowerCase() })),
    ...(await Promise.all(['sessions', 'memories', 'files', 'usage'].map((name) => move(store.container<Any>(name), byOwner)))),
    await move(store.container<Any>('operations'), (d) => {
      const upn = (d.principal as { upn?: unknown } | undefined)?.upn;
      if (typeof upn !== 'string' || typeof d.operation_id !== 'string') return undefined;
      const key = operationKey(upn, d.operation_id);
      return { ...d, id: key, pk: key };
    }),
  ].reduce((a, b) => a + b, 0);
  await resources.upsert({ ...MARKER, version: SCHEMA_VERSION, migrated_on: new Date().toISOString() });
  if (moved > 0) log(`Store migrated to schema ${SCHEMA_VERSION}: ${moved} documents re-keyed`);
}
