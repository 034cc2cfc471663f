// Chooses the store adapter from configuration.
import type { StoreConfig } from '../config.js';
import { openCosmosStore } from './cosmos-store.js';
import { openSqliteStore } from './sqlite-store.js';
import type { DocumentStore } from './types.js';

/** Opens the configured store. Cosmos containers are created only when a key is given (emulators). */
export async function openStore(config: StoreConfig): Promise<DocumentStore> {
  if (config.kind === 'embedded') return openSqliteStore(config.file);
  return openCosmosStore({
    endpoint: config.endpoint,
    database: config.database,
    key: config.key,
    clientId: config.clientId,
    createContainers: config.key !== undefined,
  });
}
