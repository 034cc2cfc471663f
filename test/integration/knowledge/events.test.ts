// Event-triggered pipelines against Azurite: a blob created under the pipeline's paths is indexed, and one deleted is
// gone from the index and from the semantic cache, each within 60 s, through the standalone server's stand-in for Event
// Grid (it lists the containers and writes Blob events to the pipeline-events queue) and the same queue handler Event
// Grid's deliveries reach in Azure. An event delivered twice starts one run; a blob outside the pipeline's paths starts
// none; an Event pipeline must read a storage source.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TIMERS } from '../../../functions/groups.js';
import { startMockLlm, type MockLlm } from '../../../scripts/mock-llm.js';
import { BLOB_CREATED, EVENTS } from '../../../shared/knowledge/events.js';
import { derivedRunName } from '../../../shared/knowledge/schedule.js';
import { partitionOf, resourcesOf } from '../../../shared/providers/types/resource-type.js';
import { dataPipelineRuns } from '../../../shared/providers/types/data-pipelines.js';
import { providers, startTestApp, type TestApp } from '../../support/app.js';
import { TEXTS } from '../../support/documents.js';
import { complete, objectId, seedKnowledgeAgent, seedPipeline, updateAgent, upsert } from './support.js';
import { containerOf } from '../../support/storage.js';

describe('event-triggered data pipelines', () => {
  let llm: MockLlm;
  let app: TestApp;
  const container = `events-${randomUUID().slice(0, 8)}`;
  const blobs = () => containerOf(app.services, container);
  const eventRuns = async () =>
    (
      await resourcesOf(app.services.store, dataPipelineRuns).query({
        partition: partitionOf(dataPipelineRuns),
        where: [{ field: 'created_by', op: 'eq', value: EVENTS }],
      })
    ).items;
  const indexed = async () => (await app.services.vectors.documents('on-change')).map((d) => d.source).sort();

  beforeAll(async () => {
    llm = await startMockLlm();
    // The standalone server's timers, as `npm start` runs them: the scheduler and the Blob events stand-in.
    app = await startTestApp({ ALLOW_PRIVATE_NETWORK: 'true' }, { timers: TIMERS });
    await blobs().create();
    const embedding = await seedKnowledgeAgent(app, llm, 'events-kb');
    await seedPipeline(
      app,
      'events-kb',
      'on-change',
      { data_source_type: 'AzureBlob', container },
      ['docs/'],
      'on-change',
    );
    await updateAgent(app, 'events-kb', {
      cache_settings: {
        semantic_cache_enabled: true,
        semantic_cache_settings: { embedding_ai_model_object_id: embedding },
      },
    });
    const pipeline = (await app.call('GET', `${providers(app, 'Svc.DataPipeline')}/dataPipelines/on-change`)).body as {
      resource: Record<string, unknown>;
    };
    await upsert(app, 'Svc.DataPipeline', 'dataPipelines', 'on-change', {
      ...pipeline.resource,
      trigger_type: 'Event',
    });
  });
  afterAll(async () => {
    await app.close();
    await llm.close();
  });

  it('refuses an Event trigger on a source that has no Blob events', async () => {
    await upsert(app, 'Svc.DataSource', 'dataSources', 'web-only', {
      data_source_type: 'Web',
      urls: ['https://example.com/'],
    });
    const r = await app.call('POST', `${providers(app, 'Svc.DataPipeline')}/dataPipelines/web-events`, {
      body: {
        name: 'web-events',
        data_source_object_id: objectId('Svc.DataSource', 'dataSources', 'web-only'),
        index_name: 'web-events',
        embedding_ai_model_object_id: objectId('Svc.AIModel', 'aiModels', 'events-kb-embedding'),
        trigger_type: 'Event',
      },
    });
    expect(r.status).toBe(400);
    expect(JSON.stringify(r.body)).toContain('must be AzureBlob or AzureDataLake');
  });

  it('indexes a blob created under its paths, and removes one deleted, each within 60 s', async () => {
    const created = Date.now();
    await blobs().getBlockBlobClient('docs/penguins.txt').uploadData(Buffer.from(TEXTS['penguins.txt']));
    await blobs().getBlockBlobClient('elsewhere/seals.txt').uploadData(Buffer.from('Seals rest on ice floes.'));
    await expect.poll(indexed, { timeout: 60_000, interval: 500 }).toEqual(['docs/penguins.txt']);
    const indexedAfter = Date.now() - created;
    // The run records its outcome after it has written the index: a search can find the document first.
    await expect.poll(async () => (await eventRuns())[0]?.status, { timeout: 30_000 }).toBe('Completed');
    const [run] = await eventRuns();
    expect(run).toMatchObject({ status: 'Completed', documents: ['docs/penguins.txt'], counts: { added: 1 } });
    // An answer that quotes the document is cached: asked again, the model is not called.
    const prompt = 'How do emperor penguins keep their eggs warm?';
    const calls = () => llm.requests.length;
    expect((await complete(app, 'events-kb', prompt)).body.citations.map((c) => c.source)).toEqual([
      'docs/penguins.txt',
    ]);
    const afterFirst = calls();
    await complete(app, 'events-kb', prompt);
    expect(calls()).toBe(afterFirst);

    const deleted = Date.now();
    await blobs().deleteBlob('docs/penguins.txt');
    await expect.poll(indexed, { timeout: 60_000, interval: 500 }).toEqual([]);
    const removedAfter = Date.now() - deleted;
    await expect
      .poll(async () => (await eventRuns()).some((r) => r.status === 'Completed' && r.counts.removed === 1), {
        timeout: 30_000,
      })
      .toBe(true);
    // The cached answer went with the document: the same prompt goes to the model, and cites nothing.
    await expect
      .poll(async () => (await eventRuns()).every((r) => r.status === 'Completed' || r.status === 'Failed'), {
        timeout: 30_000,
      })
      .toBe(true);
    const again = await complete(app, 'events-kb', prompt);
    expect(calls()).toBeGreaterThan(afterFirst);
    expect(again.body.citations).toEqual([]);
    // The blob outside the pipeline's paths started nothing.
    expect((await eventRuns()).flatMap((r) => r.documents ?? [])).not.toContain('elsewhere/seals.txt');
    console.log(
      `event-triggered runs: indexed ${indexedAfter} ms after the upload, removed ${removedAfter} ms after the delete`,
    );
  });

  it('starts one run for an Event Grid event delivered twice', async () => {
    await blobs()
      .getBlockBlobClient('docs/walrus.txt')
      .uploadData(Buffer.from('Walruses use their tusks to climb onto ice.'));
    const url = `${blobs().url}/docs/walrus.txt`;
    // An event as Event Grid writes it to a storage queue (Event Grid schema), delivered twice.
    const event = {
      id: randomUUID(),
      topic: '/subscriptions/0/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/devstoreaccount1',
      subject: `/blobServices/default/containers/${container}/blobs/docs/walrus.txt`,
      eventType: BLOB_CREATED,
      eventTime: new Date().toISOString(),
      data: {
        api: 'PutBlob',
        contentType: 'text/plain',
        contentLength: 44,
        blobType: 'BlockBlob',
        url,
        sequencer: '0000000000000001',
      },
      dataVersion: '',
      metadataVersion: '1',
    };
    const before = (await eventRuns()).length;
    await app.services.producer.send(app.services.config.knowledge.eventsQueue, event);
    await app.services.producer.send(app.services.config.knowledge.eventsQueue, event);
    await expect
      .poll(async () => (await indexed()).includes('docs/walrus.txt'), { timeout: 60_000, interval: 500 })
      .toBe(true);
    // The event's run is named for the event and the pipeline: the second delivery found it made.
    const name = derivedRunName(objectId('Svc.DataPipeline', 'dataPipelines', 'on-change'), `event:${event.id}`);
    await expect
      .poll(async () => (await eventRuns()).filter((r) => r.name === name).map((r) => r.status), { timeout: 30_000 })
      .toEqual(['Completed']);
    // The stand-in may have seen the blob too, with an event of its own: at most one more run.
    expect((await eventRuns()).length - before).toBeLessThanOrEqual(2);
  });
});
