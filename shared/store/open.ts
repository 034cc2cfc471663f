// Chooses the store adapter from configuration. Each adapter's module is loaded only when it is used: a
// Cosmos DB deployment ships without the embedded store's native SQLite binding (an optional dependency),
// and the embedded store starts without loading the Cosmos SDK.
import { ConfigError, type StoreConfig } from '../config.js';
import { errorCode, type DocumentStore } from './types.js';

async function loadSqlite(): Promise<typeof import('./sqlite-store.js')> {
  try {
    return await import('./sqlite-store.js');
  } catch (e) {
    const missing = errorCode(e) === 'ERR_MODULE_NOT_FOUND' || /better-sqlite3|bindings|\.node\b/.test(String(e));
    if (!missing) throw e;
    throw new ConfigError(
      'STORE=embedded needs better-sqlite3, which is not installed (it compiles where no prebuilt binary ' +
        'exists: install python3, make and a C++ compiler, then npm ci), or set STORE=cosmos',
    );
  }
}

/** Opens the configured store. Cosmos containers are created only when a key is given (emulators). */
export async function openStore(config: StoreConfig): Promise<DocumentStore> {
  if (config.kind === 'embedded') return (await loadSqlite()).openSqliteStore(config.file);
  const { openCosmosStore } = await import('./cosmos-store.js');
  return openCosmosStore({
    endpoint: config.endpoint,
    database: config.database,
    key: config.key,
    clientId: config.clientId,
    createContainers: config.key !== undefined,
  });
}
