// A random key the service keeps in its own store: created by the first instance that needs it and then
// shared by every instance (so a token one instance signs, another verifies). For integrity keys whose
// loss only invalidates what they signed (continuation tokens), not for credentials.
import { randomBytes } from 'node:crypto';
import { narrowed } from './narrowed.js';
import { ConflictError, type Doc, type DocumentStore } from './types.js';

interface KeyDoc extends Doc {
  key: string;
}

declare module './types.js' {
  interface StoredDocs {
    'resources/key': KeyDoc;
  }
}

/** The partition of the service's own documents in the resources container. */
export const META_PK = '_meta';

export function storedKey(store: Pick<DocumentStore, 'container'>, id: string): () => Promise<Buffer> {
  const container = narrowed(store.container('resources'), (doc): doc is KeyDoc => doc.pk === META_PK && doc.id === id);
  let loaded: Promise<Buffer> | undefined;
  const load = async (): Promise<Buffer> => {
    const existing = await container.read(META_PK, id);
    if (existing) return Buffer.from(existing.key, 'base64');
    try {
      await container.create({ id, pk: META_PK, key: randomBytes(32).toString('base64') });
    } catch (e) {
      if (!(e instanceof ConflictError)) throw e; // another instance created it first
    }
    const created = await container.read(META_PK, id);
    if (!created) throw new Error(`The key ${id} could not be stored`);
    return Buffer.from(created.key, 'base64');
  };
  return () => {
    loaded ??= load().catch((e: unknown) => {
      loaded = undefined;
      throw e;
    });
    return loaded;
  };
}
