// Chooses the vector index adapter beside the store: sqlite-vec with the embedded store, Cosmos DB vector
// search with Cosmos. Opened on first use, so a service that never indexes pays nothing at start-up, and a
// platform without the optional sqlite-vec binary starts and says what is missing when knowledge is used.
import { ConfigError, type Config } from '../config.js';
import type { VectorIndex } from './vector-index.js';

async function open(config: Config): Promise<VectorIndex> {
  const store = config.store;
  if (store.kind === 'cosmos') {
    const { openCosmosVectorIndex } = await import('./cosmos-vector-index.js');
    return openCosmosVectorIndex({ ...store, createContainers: store.key !== undefined });
  }
  try {
    const { openSqliteVectorIndex } = await import('./sqlite-vector-index.js');
    return openSqliteVectorIndex(config.knowledge.file, { rescoringDepth: config.knowledge.rescoringDepth });
  } catch (e) {
    if (!/sqlite-vec|vec0|ERR_MODULE_NOT_FOUND/.test(String(e))) throw e;
    throw new ConfigError(
      `The embedded vector index needs the sqlite-vec package, which has no binary for ` +
        `${process.platform}-${process.arch} here; use STORE=cosmos`,
    );
  }
}

/** The configured vector index, opened when first called. */
export function lazyVectorIndex(config: Config): VectorIndex {
  let opened: Promise<VectorIndex> | undefined;
  // A failed open is tried again at the next use.
  const index = () =>
    (opened ??= open(config).catch((e: unknown) => {
      opened = undefined;
      throw e;
    }));
  return {
    kind: config.store.kind,
    replaceDocument: async (...a) => (await index()).replaceDocument(...a),
    removeDocument: async (...a) => (await index()).removeDocument(...a),
    documents: async (...a) => (await index()).documents(...a),
    removeCached: async (...a) => (await index()).removeCached(...a),
    search: async (...a) => (await index()).search(...a),
    close: async () => {
      if (opened) await (await opened.catch(() => undefined))?.close();
    },
  };
}
