// The two store adapters as the contract suite runs them: each test gets a fresh, empty store.
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { inject } from 'vitest';
import { openCosmosStore } from '../../shared/store/cosmos-store.js';
import { openSqliteStore } from '../../shared/store/sqlite-store.js';
import type { DocumentStore } from '../../shared/store/types.js';
import { tempDir } from './services.js';

export interface StoreUnderTest {
  name: 'embedded' | 'cosmos';
  open(): Promise<DocumentStore>;
  /** Features the local server lacks; the suite skips them on this adapter and says why. */
  gaps: ReadonlySet<'groupBy' | 'countDistinct' | 'ttl'>;
}

export const STORES: StoreUnderTest[] = [
  { name: 'embedded', open: () => Promise.resolve(openSqliteStore(path.join(tempDir(), 'store.db'))), gaps: new Set() },
  {
    name: 'cosmos',
    open: () =>
      openCosmosStore({
        endpoint: inject('cosmosEndpoint'),
        key: 'local-test-key',
        database: `db-${randomUUID()}`,
        createContainers: true,
      }),
    // @vercel/cosmosdb-server runs neither GROUP BY nor DISTINCT, and never expires items (TTL).
    gaps: new Set(['groupBy', 'countDistinct', 'ttl']),
  },
];
