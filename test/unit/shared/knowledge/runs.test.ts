// Pipeline runs in process: started, executed as the queue worker does, run again over a changed source,
// and failed by the poison queue; the source is a local web server, the embeddings the mock model's.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockLlm, type MockLlm } from '../../../../scripts/mock-llm.js';
import { failPoisonedRun, runPipeline, startRun } from '../../../../shared/knowledge/runs.js';
import { aiModels, apiEndpointConfigurations } from '../../../../shared/providers/types/catalog.js';
import {
  dataPipelineRuns,
  dataPipelines,
  dataSources,
  type DataPipelineRunDoc,
} from '../../../../shared/providers/types/data-pipelines.js';
import { RunMessage } from '../../../../shared/queues/messages.js';
import { objectIdOf, type ResourceKind } from '../../../../shared/providers/types/resource-type.js';
import { OWNER, put } from '../../../support/resources.js';
import { memoryProducer, testServices, type TestServices } from '../../../support/services.js';

describe('data pipeline runs', () => {
  let s: TestServices;
  let llm: MockLlm;
  let web: http.Server;
  let base = '';
  const files = new Map<string, string>();
  const id = (kind: ResourceKind, name: string) => objectIdOf(s.config.instanceId, kind, name);
  const run = async (objectId: string) => {
    const doc = await s.resourceCache.get(objectId, dataPipelineRuns);
    s.resourceCache.invalidate(objectId);
    if (!doc) throw new Error(`no run ${objectId}`);
    return doc;
  };
  /** A run started and executed by one delivery, as read afterwards. */
  const producer = memoryProducer();
  /** A run started and executed by one delivery of the message it queued, as read afterwards. */
  const processed = async (pipeline: string): Promise<DataPipelineRunDoc> => {
    const { object_id } = await startRun(s, OWNER, pipeline);
    expect((await run(object_id)).status).toBe('Pending');
    const queued = producer.sent.at(-1);
    expect(queued).toEqual({ queue: s.config.knowledge.queue, message: { run: object_id.split('/').pop() } });
    await runPipeline(RunMessage.parse(queued?.message), { id: 'm', dequeueCount: 1 }, s);
    return run(object_id);
  };

  beforeAll(async () => {
    llm = await startMockLlm();
    web = http.createServer((req, res) => {
      const text = files.get(req.url ?? '');
      if (text === undefined) res.writeHead(404).end();
      else
        res
          .writeHead(200, { 'content-type': req.url?.endsWith('.txt') ? 'text/plain' : 'application/octet-stream' })
          .end(text);
    });
    await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(web.address() as AddressInfo).port}`;
    s = await testServices({ env: { ALLOW_PRIVATE_NETWORK: 'true' }, producer });
    await put(s, apiEndpointConfigurations, 'mock', {
      provider: 'openai',
      url: `${llm.url}/v1`,
      authentication_type: 'None',
    });
    await put(s, aiModels, 'embed', {
      model_type: 'embedding',
      deployment_name: 'embed',
      api_endpoint_object_id: id(apiEndpointConfigurations, 'mock'),
    });
    await put(s, dataSources, 'site', { data_source_type: 'Web', urls: [`${base}/docs/`] });
    files.set('/docs/a.txt', 'Penguins huddle together through the winter.');
    files.set('/docs/b.txt', 'Albatrosses glide for hours without a wingbeat.');
    await put(s, dataPipelines, 'birds', {
      data_source_object_id: id(dataSources, 'site'),
      source_paths: [`${base}/docs/a.txt`, `${base}/docs/b.txt`, `${base}/docs/c.bin`],
      index_name: 'birds',
      embedding_ai_model_object_id: id(aiModels, 'embed'),
    });
    files.set('/docs/c.bin', 'not a format the pipeline indexes');
  });
  afterAll(async () => {
    await s.close();
    await llm.close();
    await new Promise<void>((resolve) => web.close(() => resolve()));
  });

  it('indexes each readable document, and reports one it cannot read without failing the run', async () => {
    const done = await processed('birds');
    expect(done).toMatchObject({
      status: 'Completed',
      counts: { documents: 3, added: 2, failed_documents: 1, unchanged: 0, removed: 0 },
    });
    expect(done.errors).toEqual([
      { source: `${base}/docs/c.bin`, message: expect.stringContaining('not indexed') as string },
    ]);
    expect(done.reading).toBeUndefined();
    expect((await s.vectors.documents('birds')).map((d) => d.source).sort()).toEqual([
      `${base}/docs/a.txt`,
      `${base}/docs/b.txt`,
    ]);
  });

  it('leaves unchanged documents alone, re-indexes a changed one, removes one the source no longer has', async () => {
    files.set('/docs/b.txt', 'Albatrosses sleep on the wing.');
    files.delete('/docs/a.txt');
    const done = await processed('birds');
    expect(done.counts).toMatchObject({ updated: 1, removed: 1, failed_documents: 1 });
    expect((await s.vectors.documents('birds')).map((d) => d.source)).toEqual([`${base}/docs/b.txt`]);
  });

  it('refuses to start a run whose embedding model is missing, and fails a run the poison queue gives up', async () => {
    await put(s, dataPipelines, 'broken', {
      data_source_object_id: id(dataSources, 'site'),
      source_paths: [],
      index_name: 'broken',
      embedding_ai_model_object_id: id(aiModels, 'missing'),
    });
    await expect(startRun(s, OWNER, 'broken')).rejects.toMatchObject({
      kind: 'invalid',
      message: expect.stringContaining('does not exist') as string,
    });
    const { object_id } = await startRun(s, OWNER, 'birds');
    await failPoisonedRun({ run: object_id.split('/').pop() ?? '' }, { id: 'm', dequeueCount: 5 }, s);
    expect(await run(object_id)).toMatchObject({
      status: 'Failed',
      errors: [{ message: expect.stringContaining('several attempts') as string }],
    });
  });
});
