// A Cosmos DB that cannot be used stops start-up with one line naming COSMOS_ENDPOINT and the authentication,
// not a stack of credential errors; and nothing npm start began is left running.
import { describe, expect, it, inject } from 'vitest';
import { freePort } from '../../scripts/azurite.js';
import { runScript } from '../support/processes.js';
import { tempDir } from '../support/services.js';

describe('Cosmos DB at start-up', () => {
  const start = async (env: Record<string, string>) =>
    runScript('start', [], {
      DATA_DIR: tempDir(),
      CORE_PORT: String(await freePort()),
      MANAGEMENT_PORT: String(await freePort()),
      AzureWebJobsStorage: inject('storageConnectionString'),
      STORE: 'cosmos',
      ...env,
    });

  it('names the endpoint and the key when the account cannot be reached', async () => {
    const endpoint = `http://127.0.0.1:${await freePort()}`;
    const r = await start({ COSMOS_ENDPOINT: endpoint, COSMOS_KEY: 'emulator-key' });
    expect(r.code).toBe(1);
    const lines = r.stderr
      .trim()
      .split('\n')
      .filter((l) => !l.startsWith('npm warn'));
    expect(lines).toEqual([
      `Cosmos DB is not usable: COSMOS_ENDPOINT=${endpoint}, COSMOS_DATABASE=agent-platform, authentication: ` +
        `account key (COSMOS_KEY): cannot connect (ECONNREFUSED)`,
    ]);
  });

  it('names the endpoint and Entra ID when no credential is available', async () => {
    const endpoint = `https://127.0.0.1:${await freePort()}/`;
    const r = await start({
      COSMOS_ENDPOINT: endpoint,
      AZURE_CLIENT_ID: '',
      COSMOS_KEY: '',
      AZURE_TENANT_ID: '',
      AZURE_CLIENT_SECRET: '',
    });
    expect(r.code).toBe(1);
    const lines = r.stderr
      .trim()
      .split('\n')
      .filter((l) => !l.startsWith('npm warn'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      new RegExp(
        `^Cosmos DB is not usable: COSMOS_ENDPOINT=${endpoint.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}, ` +
          `COSMOS_DATABASE=agent-platform, authentication: Entra ID \\(managed identity, or az login\\): `,
      ),
    );
  }, 60_000);
});
