// Moves documents written under an earlier key scheme to the current one, once per store (a marker document
// records the schema version). Version 2 case-folds keys: resource ids are case-folded names, access tokens
// are keyed by the agent's resource id, users' data by the case-folded UPN, and async operations by owner.
import { operationKey } from './completions/operations.js';
import { narrowed } from './store/narrowed.js';
import { META_PK } from './store/stored-key.js';
import { ConflictError, type Container, type Doc, type DocumentStore, type Stored } from './store/types.js';

const SCHEMA_VERSION = 2;

/** The document that records the store's schema version. */
interface MarkerDoc extends Doc {
  version: number;
  migrated_on: string;
}

declare module './store/types.js' {
  interface StoredDocs {
    'resources/schema': MarkerDoc;
  }
}

const MARKER = { pk: META_PK, id: 'schema' };
const isMarker = (doc: Doc): doc is MarkerDoc => doc.pk === MARKER.pk && doc.id === MARKER.id;

/** Every document of a container whose key `rekey` changes, read before anything is moved. */
async function pending<T extends Doc>(
  container: Container<T>,
  rekey: (doc: Stored<T>) => T | undefined,
): Promise<[Stored<T>, T][]> {
  const moves: [Stored<T>, T][] = [];
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

async function move<T extends Doc>(container: Container<T>, rekey: (doc: Stored<T>) => T | undefined): Promise<number> {
  const moves = await pending(container, rekey);
  for (const [from, to] of moves) {
    // The copy is written as a new document: the ETag read with the old one goes.
    const body = { ...to };
    Reflect.deleteProperty(body, '_etag');
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

/** Case-folds the owner fields of a user's document. */
const byOwner = <T extends Doc>(doc: Stored<T>): T => ({
  ...doc,
  pk: doc.pk.toLowerCase(),
  ...('upn' in doc && typeof doc.upn === 'string' ? { upn: doc.upn.toLowerCase() } : {}),
});

/** Brings the store to the current schema; cheap (one read) once it is there. */
export async function migrate(store: DocumentStore, log: (message: string) => void = () => undefined): Promise<void> {
  const resources = store.container('resources');
  const markers = narrowed(resources, isMarker);
  const marker = await markers.read(MARKER.pk, MARKER.id);
  if (marker && marker.version >= SCHEMA_VERSION) return;
  const moved = [
    await move(resources, (d) => ({ ...d, id: d.id.toLowerCase() })),
    await move(store.container('tokens'), (d) => ({ ...d, pk: d.pk.toLowerCase() })),
    await move(store.container('sessions'), byOwner),
    await move(store.container('memories'), byOwner),
    await move(store.container('files'), byOwner),
    await move(store.container('usage'), byOwner),
    await move(store.container('operations'), (d) => {
      const key = operationKey(d.principal.upn, d.operation_id);
      return { ...d, id: key, pk: key };
    }),
  ].reduce((a, b) => a + b, 0);
  await markers.upsert({ ...MARKER, version: SCHEMA_VERSION, migrated_on: new Date().toISOString() });
  if (moved > 0) log(`Store migrated to schema ${SCHEMA_VERSION}: ${moved} documents re-keyed`);
}
