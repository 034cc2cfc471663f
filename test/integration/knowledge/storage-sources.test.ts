// Storage data sources on Azurite: an AzureBlob source reads every one of its containers (sources named by
// container when there are several), and an AzureDataLake source reads the directories it names in its file
// system through the Blob endpoint, with the account's connection string from an SVC_SECRET_ setting.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockLlm, type MockLlm } from '../../../scripts/mock-llm.js';
import { blobUrlOf } from '../../../shared/knowledge/sources.js';
import { providers, startTestApp, type TestApp } from '../../support/app.js';
import { TEXTS } from '../../support/documents.js';
import { complete, objectId, processPipeline, seedKnowledgeAgent, seedPipeline, upsert } from './support.js';
import { containerOf } from '../../support/storage.js';

describe('storage data sources', () => {
  let llm: MockLlm;
  let app: TestApp;
  const id = randomUUID().slice(0, 8);
  const [first, second, lake] = [`first-${id}`, `second-${id}`, `lake-${id}`];
  const put = async (container: string, name: string, text: string) => {
    const c = containerOf(app.services, container);
    await c.createIfNotExists();
    await c.getBlockBlobClient(name).uploadData(Buffer.from(text));
  };

  beforeAll(async () => {
    llm = await startMockLlm();
    app = await startTestApp({ ALLOW_PRIVATE_NETWORK: 'true' });
    const storage = app.services.config.storage;
    if (storage.kind !== 'connection-string') throw new Error('the tests run on Azurite');
    process.env.SVC_SECRET_LAKE_CONNECTION = storage.connectionString;
    await put(first, 'docs/penguins.txt', TEXTS['penguins.txt']);
    await put(second, 'docs/coffee.txt', TEXTS['coffee.html']);
    await put(lake, 'reports/volcanoes.txt', TEXTS['volcanoes.md']);
    await put(lake, 'reports-old/stale.txt', 'An old report nobody should read.');
    await put(lake, 'other/bicycles.txt', TEXTS['bicycles.docx']);
    await seedKnowledgeAgent(app, llm, 'storage-kb');
  });
  afterAll(async () => {
    delete process.env.SVC_SECRET_LAKE_CONNECTION;
    await app.close();
    await llm.close();
  });

  it('reads every container of an AzureBlob source, naming each document by its container', async () => {
    await seedPipeline(
      app,
      'storage-kb',
      'both',
      { data_source_type: 'AzureBlob', container: first, configuration: { containers: [second, first] } },
      ['docs/'],
      'both',
    );
    const run = await processPipeline(app, 'both');
    expect(run.status).toBe('Completed');
    expect(run.counts).toMatchObject({ documents: 2, added: 2 });
    const answer = await complete(app, 'storage-kb', TEXTS['coffee.html']);
    expect(answer.body.citations[0]?.source).toBe(`${second}/docs/coffee.txt`);
  });

  it('reads the named directories of a Data Lake file system with a connection string from a secret', async () => {
    await seedPipeline(
      app,
      'storage-kb',
      'lake',
      {
        data_source_type: 'AzureDataLake',
        filesystem: lake,
        paths: ['/reports'],
        configuration: { connection_string_secret_name: 'SVC_SECRET_LAKE_CONNECTION' },
      },
      [],
      'lake',
    );
    const run = await processPipeline(app, 'lake');
    expect(run.status).toBe('Completed');
    expect(run.counts).toMatchObject({ documents: 1, added: 1 });
    expect((await complete(app, 'storage-kb', TEXTS['volcanoes.md'])).body.citations[0]?.source).toBe(
      'reports/volcanoes.txt',
    );
  });

  it(
    'fails a run whose connection string secret is not set, saying so, and refuses what cannot be a storage ' +
      'source',
    async () => {
      await seedPipeline(
        app,
        'storage-kb',
        'unset',
        {
          data_source_type: 'AzureDataLake',
          filesystem: lake,
          configuration: { connection_string_secret_name: 'SVC_SECRET_NOT_SET' },
        },
        [],
        'unset',
      );
      const run = await processPipeline(app, 'unset');
      expect(run.status).toBe('Failed');
      expect(JSON.stringify(run.errors)).toContain('SVC_SECRET_NOT_SET is not set');
      // A name that is not an SVC_SECRET_ setting is kept as defined, and a run says what it must be.
      await seedPipeline(
        app,
        'storage-kb',
        'misnamed',
        {
          data_source_type: 'AzureBlob',
          container: first,
          configuration: { connection_string_secret_name: 'blob-cs' },
        },
        [],
        'misnamed',
      );
      const misnamed = await processPipeline(app, 'misnamed');
      expect(misnamed.status).toBe('Failed');
      expect(JSON.stringify(misnamed.errors)).toContain('connection_string_secret_name blob-cs');

      await upsert(app, 'Svc.DataSource', 'dataSources', 'no-filesystem', {
        data_source_type: 'AzureDataLake',
        configuration: { connection_string_secret_name: 'SVC_SECRET_LAKE_CONNECTION' },
      });
      await upsert(app, 'Svc.DataPipeline', 'dataPipelines', 'no-filesystem', {
        data_source_object_id: objectId('Svc.DataSource', 'dataSources', 'no-filesystem'),
        index_name: 'nofs',
        embedding_ai_model_object_id: objectId('Svc.AIModel', 'aiModels', 'storage-kb-embedding'),
      });
      const refused = await app.call(
        'POST',
        `${providers(app, 'Svc.DataPipeline')}/dataPipelines/no-filesystem/process`,
      );
      expect(refused.status).toBe(400);
      expect(JSON.stringify(refused.body)).toContain('needs a filesystem');

      for (const body of [
        { data_source_type: 'AzureBlob', container: first, filesystem: lake },
        { data_source_type: 'Web', urls: ['https://example.com/'], configuration: { containers: [first] } },
        {
          data_source_type: 'AzureBlob',
          container: first,
          account_url: 'https://acct.blob.core.windows.net',
          configuration: { connection_string_secret_name: 'SVC_SECRET_LAKE_CONNECTION' },
        },
      ]) {
        const r = await app.call('POST', `${providers(app, 'Svc.DataSource')}/dataSources/refused`, {
          body: { name: 'refused', ...body },
        });
        expect(r.status, JSON.stringify(body)).toBe(400);
      }
    },
  );

  it('reads a Data Lake account through the Blob host of the same account', () => {
    expect(blobUrlOf('https://acct.dfs.core.windows.net/')).toBe('https://acct.blob.core.windows.net');
    expect(blobUrlOf('https://acct.blob.core.windows.net')).toBe('https://acct.blob.core.windows.net');
    expect(blobUrlOf('https://acct.dfs.core.windows.net.attacker.example')).toBe(
      'https://acct.dfs.core.windows.net.attacker.example',
    );
  });
});
