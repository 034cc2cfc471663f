// Knowledge end to end: a Web source on a loopback server and a Blob source on Azurite, each
// with the five file types and a corrupt PDF; runs index them, completions retrieve the right document first
// and cite it, filters narrow the search, reprocessing follows changes and removals, and a run cut short
// finishes on redelivery with no duplicate partitions.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockLlm, textOf, type MockLlm } from '../../../scripts/mock-llm.js';
import { runPipeline } from '../../../shared/knowledge/runs.js';
import { startTestApp, providers, type TestApp } from '../../support/app.js';
import { CORRUPT_PDF, documentFiles, TEXTS, TITLES, type DocumentName } from '../../support/documents.js';
import {
  complete,
  processPipeline,
  readRun,
  seedKnowledgeAgent,
  seedPipeline,
  serveDocuments,
  updateAgent,
  upsert,
  objectId,
  type DocumentServer,
} from './support.js';
import { containerOf } from '../../support/storage.js';

const NAMES = Object.keys(TEXTS) as DocumentName[];
const CHANGED_PENGUINS =
  'Glaciers carve fjords as compacted snow flows downhill under its own weight grinding bedrock into fine rock flour.';

describe('knowledge from a Web source', () => {
  let llm: MockLlm;
  let app: TestApp;
  let web: DocumentServer;
  const url = (name: string) => `${web.url}/docs/${name}`;

  beforeAll(async () => {
    llm = await startMockLlm();
    web = await serveDocuments();
    app = await startTestApp({ ALLOW_PRIVATE_NETWORK: 'true' });
    const files = await documentFiles();
    for (const name of NAMES) web.files.set(`/docs/${name}`, files[name]);
    web.files.set('/docs/broken.pdf', { bytes: CORRUPT_PDF, type: 'application/pdf' });
    // One currency unit per token, in and out, for the chat and the embedding model: costs are token counts.
    await seedKnowledgeAgent(app, llm, 'web-kb', {
      pricing: { input_per_million: 1_000_000, output_per_million: 1_000_000, currency: 'USD' },
    });
    await seedPipeline(
      app,
      'web-kb',
      'web-docs',
      { data_source_type: 'Web', urls: [`${web.url}/docs/`] },
      [...NAMES, 'broken.pdf'].map(url),
      'web-docs',
    );
  });
  afterAll(async () => {
    await app.close();
    await web.close();
    await llm.close();
  });

  it('indexes the five types, reports the corrupt PDF in errors and completes the run', async () => {
    const run = await processPipeline(app, 'web-docs');
    expect(run.status).toBe('Completed');
    expect(run.counts).toMatchObject({ documents: 6, failed_documents: 1, added: 5, unchanged: 0, removed: 0 });
    expect(run.counts.partitions).toBeGreaterThanOrEqual(5);
    expect(run.errors).toEqual([{ source: url('broken.pdf'), message: expect.stringContaining('PDF') as string }]);
    expect(run.started_on).not.toBeNull();
    expect(Date.parse(run.completed_on ?? '')).toBeGreaterThanOrEqual(Date.parse(run.started_on ?? ''));
    // The embeddings went out in batches to the embeddings API, with the model's deployment name.
    expect(
      llm.embeddingRequests.every(
        (r) => r.path === '/v1/embeddings' && r.body.model === 'text-embedding-3-small' && Array.isArray(r.body.input),
      ),
    ).toBe(true);
    // What the embeddings took and cost, at the embedding model's prices.
    expect(run.usage?.embedding_tokens).toBeGreaterThan(0);
    expect(run.usage).toEqual({
      embedding_tokens: run.usage?.embedding_tokens,
      cost: run.usage?.embedding_tokens,
      currency: 'USD',
    });
    const listed = await app.call('GET', `${providers(app, 'Svc.DataPipeline')}/dataPipelineRuns`);
    expect((listed.body as { resource: { name: string } }[]).map((e) => e.resource.name)).toContain(run.name);
  });

  it.each(NAMES)(
    'retrieves %s first for a prompt equal to its text, cites it and gives it to the model',
    async (name) => {
      const before = llm.requests.length;
      const embedded = llm.embeddingRequests.length;
      const { status, body } = await complete(app, 'web-kb', TEXTS[name]);
      expect(status).toBe(200);
      // The cost is the model call's tokens and the prompt's embedding tokens (the mock's usage for them).
      expect(llm.embeddingRequests.length).toBe(embedded + 1);
      expect(body.total_cost).toBe(body.total_tokens + TEXTS[name].split(/\s+/).filter(Boolean).length);
      const [first] = body.citations;
      expect(first).toMatchObject({ source: url(name), title: TITLES[name] });
      expect(first?.text.replace(/\s+/g, ' ')).toContain(TEXTS[name].split(' ').slice(0, 5).join(' '));
      expect(first?.score).toBeGreaterThan(0.6);
      expect(body.citations.map((c) => c.score)).toEqual([...body.citations.map((c) => c.score)].sort((a, b) => b - a));
      expect(body.citations.length).toBeLessThanOrEqual(5);
      // The model read the partitions with their sources before the prompt.
      const messages = llm.requests[before]?.body.messages ?? [];
      expect(
        messages.some(
          (m) =>
            m.role === 'system' &&
            textOf(m.content).includes(url(name)) &&
            textOf(m.content).includes(first?.text ?? '\u0000'),
        ),
      ).toBe(true);
    },
  );

  it('honours index_top_n and index_filter_expression, and refuses a filter it cannot parse', async () => {
    const top1 = await complete(app, 'web-kb', TEXTS['penguins.txt'], {
      settings: { agent_parameters: { index_top_n: 1 } },
    });
    expect(top1.body.citations).toHaveLength(1);
    const filtered = await complete(app, 'web-kb', TEXTS['penguins.txt'], {
      settings: { agent_parameters: { index_filter_expression: "file_name eq 'coffee.html'" } },
    });
    expect(filtered.status).toBe(200);
    expect(filtered.body.citations.length).toBeGreaterThan(0);
    expect(new Set(filtered.body.citations.map((c) => c.source))).toEqual(new Set([url('coffee.html')]));
    const bySource = await complete(app, 'web-kb', TEXTS['penguins.txt'], {
      settings: { agent_parameters: { index_filter_expression: `source eq '${url('revenue.pdf')}'` } },
    });
    expect(bySource.body.citations[0]?.source).toBe(url('revenue.pdf'));
    const bad = await complete(app, 'web-kb', 'x', {
      settings: { agent_parameters: { index_filter_expression: "title eq 'x'" } },
    });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({
      error: { code: 'ValidationError', details: [{ field: 'settings.agent_parameters.index_filter_expression' }] },
    });
  });

  it('reprocesses incrementally: a changed document is replaced, a 404 one removed, the others skipped', async () => {
    web.files.set('/docs/penguins.txt', { bytes: Buffer.from(CHANGED_PENGUINS), type: 'text/plain' });
    web.files.delete('/docs/volcanoes.md');
    const embeddingsBefore = llm.embeddingRequests.length;
    const run = await processPipeline(app, 'web-docs');
    expect(run.counts).toMatchObject({
      documents: 5,
      failed_documents: 1,
      added: 0,
      updated: 1,
      unchanged: 3,
      removed: 1,
    });
    // Only the changed document was embedded again.
    expect(llm.embeddingRequests.length - embeddingsBefore).toBe(1);
    const changed = await complete(app, 'web-kb', CHANGED_PENGUINS);
    expect(changed.body.citations[0]).toMatchObject({ source: url('penguins.txt'), text: CHANGED_PENGUINS });
    const everything = await complete(app, 'web-kb', TEXTS['volcanoes.md'], {
      settings: { agent_parameters: { index_top_n: 50 } },
    });
    const sources = everything.body.citations.map((c) => c.source);
    expect(sources).not.toContain(url('volcanoes.md'));
    expect(everything.body.citations.some((c) => c.text.includes('Emperor penguins'))).toBe(false);
    expect(new Set(everything.body.citations.map((c) => c.id)).size).toBe(run.counts.partitions);
  });

  it('offers an on-demand index to the model as a search function, and cites what it found', async () => {
    await seedKnowledgeAgent(app, llm, 'web-kb-on-demand');
    await upsert(app, 'Svc.Agent', 'tools', 'docs-search', {
      tool_type: 'knowledge',
      index_name: 'web-docs',
      retrieval: 'on_demand',
      top_n: 2,
    });
    await updateAgent(app, 'web-kb-on-demand', { tool_object_ids: [objectId('Svc.Agent', 'tools', 'docs-search')] });
    const before = llm.requests.length;
    llm.next({ toolCalls: [{ name: 'docs-search__search', arguments: { query: TEXTS['coffee.html'] } }] });
    const r = await complete(app, 'web-kb-on-demand', 'How is espresso made?');
    expect(r.status).toBe(200);
    const [first, second] = llm.requests.slice(before);
    // Nothing was retrieved up front: the model chose to search.
    expect(first?.body.messages.some((m) => m.role === 'system' && textOf(m.content).includes('sources'))).toBe(false);
    expect(first?.body.tools?.map((t) => t.function.name)).toEqual(['docs-search__search']);
    expect(second?.body.messages.at(-1)?.content).toContain('Espresso is brewed');
    expect(r.body.completion).toContain(url('coffee.html'));
    expect(r.body.citations[0]).toMatchObject({ source: url('coffee.html') });
    expect(r.body.citations).toHaveLength(2);
  });

  it('retrieves only for users who may use the agent', async () => {
    const stranger = await complete(app, 'web-kb', TEXTS['coffee.html'], {}, 'stranger@example.com');
    expect(stranger.status).toBe(403);
    expect(stranger.body.citations).toBeUndefined();
  });

  it('refuses URLs outside the rules on save, and a URL outside the source prefixes in the run errors', async () => {
    const strict = await startTestApp({ ALLOW_PRIVATE_NETWORK: 'false' });
    try {
      const r = await strict.call('POST', `${providers(strict, 'Svc.DataSource')}/dataSources/intranet`, {
        body: { name: 'intranet', data_source_type: 'Web', urls: ['http://127.0.0.1:8080/'] },
      });
      expect(r.status).toBe(400);
      expect(JSON.stringify(r.body)).toContain('urls[0]');
      const local = await strict.call('POST', `${providers(strict, 'Svc.DataSource')}/dataSources/meta`, {
        body: { name: 'meta', data_source_type: 'Web', urls: ['https://169.254.169.254/'] },
      });
      expect(local.status).toBe(400);
    } finally {
      await strict.close();
    }
    await upsert(app, 'Svc.DataPipeline', 'dataPipelines', 'web-outside', {
      data_source_object_id: objectId('Svc.DataSource', 'dataSources', 'web-docs-source'),
      source_paths: [`${web.url}/private/secret.txt`, url('coffee.html')],
      index_name: 'web-outside',
      embedding_ai_model_object_id: objectId('Svc.AIModel', 'aiModels', 'web-kb-embedding'),
    });
    const run = await processPipeline(app, 'web-outside');
    expect(run.counts).toMatchObject({ documents: 2, failed_documents: 1, added: 1 });
    expect(run.errors).toEqual([
      { source: `${web.url}/private/secret.txt`, message: 'the URL is not under any of the data source urls' },
    ]);
  });

  it('refuses to process a SharePointOnline source without its site and libraries, with a 400 saying why', async () => {
    await upsert(app, 'Svc.DataSource', 'dataSources', 'sharepoint', { data_source_type: 'SharePointOnline' });
    await upsert(app, 'Svc.DataPipeline', 'dataPipelines', 'sharepoint-docs', {
      data_source_object_id: objectId('Svc.DataSource', 'dataSources', 'sharepoint'),
      index_name: 'sp',
      embedding_ai_model_object_id: objectId('Svc.AIModel', 'aiModels', 'web-kb-embedding'),
    });
    const r = await app.call('POST', `${providers(app, 'Svc.DataPipeline')}/dataPipelines/sharepoint-docs/process`);
    expect(r.status).toBe(400);
    expect(JSON.stringify(r.body)).toContain('a SharePointOnline data source needs a site_url and document_libraries');
    expect((await app.call('POST', `${providers(app, 'Svc.DataPipeline')}/dataPipelines/missing/process`)).status).toBe(
      404,
    );
    expect(
      (
        await app.call('POST', `${providers(app, 'Svc.DataPipeline')}/dataPipelines/web-docs/process`, {
          as: 'stranger@example.com',
        })
      ).status,
    ).toBe(403);
    // Runs are written by the service only.
    expect(
      (await app.call('POST', `${providers(app, 'Svc.DataPipeline')}/dataPipelineRuns/x`, { body: { name: 'x' } }))
        .status,
    ).toBe(405);
  });
});

describe('knowledge from a Blob source on Azurite', () => {
  let llm: MockLlm;
  let app: TestApp;
  const container = `kb-${randomUUID().slice(0, 8)}`;
  const blob = (name: string) => containerOf(app.services, container).getBlockBlobClient(name);

  beforeAll(async () => {
    llm = await startMockLlm();
    app = await startTestApp();
    await containerOf(app.services, container).create();
    const files = await documentFiles();
    for (const name of NAMES) await blob(`docs/${name}`).uploadData(files[name].bytes);
    await blob('docs/broken.pdf').uploadData(CORRUPT_PDF);
    await blob('elsewhere/not-listed.txt').uploadData(Buffer.from('A document outside the source paths.'));
    await seedKnowledgeAgent(app, llm, 'blob-kb');
    await seedPipeline(
      app,
      'blob-kb',
      'blob-docs',
      { data_source_type: 'AzureBlob', container },
      ['docs/'],
      'blob-docs',
    );
  });
  afterAll(async () => {
    await app.close();
    await llm.close();
  });

  it('indexes the blobs under the source paths, each type, and reports the corrupt PDF', async () => {
    const run = await processPipeline(app, 'blob-docs');
    expect(run.status).toBe('Completed');
    expect(run.counts).toMatchObject({ documents: 6, failed_documents: 1, added: 5 });
    expect(run.errors).toEqual([{ source: 'docs/broken.pdf', message: expect.stringContaining('PDF') as string }]);
    for (const name of NAMES) {
      const { body } = await complete(app, 'blob-kb', TEXTS[name]);
      expect(body.citations[0], name).toMatchObject({ source: `docs/${name}`, title: TITLES[name] });
    }
    const filtered = await complete(app, 'blob-kb', TEXTS['penguins.txt'], {
      settings: { agent_parameters: { index_filter_expression: "source eq 'docs/bicycles.docx'" } },
    });
    expect(new Set(filtered.body.citations.map((c) => c.source))).toEqual(new Set(['docs/bicycles.docx']));
  });

  it('follows a changed blob and a deleted one on the next run', async () => {
    await blob('docs/penguins.txt').uploadData(Buffer.from(CHANGED_PENGUINS));
    await blob('docs/volcanoes.md').delete();
    const run = await processPipeline(app, 'blob-docs');
    expect(run.counts).toMatchObject({ documents: 5, updated: 1, unchanged: 3, removed: 1, failed_documents: 1 });
    expect((await complete(app, 'blob-kb', CHANGED_PENGUINS)).body.citations[0]).toMatchObject({
      source: 'docs/penguins.txt',
      text: CHANGED_PENGUINS,
    });
    const all = await complete(app, 'blob-kb', TEXTS['volcanoes.md'], {
      settings: { agent_parameters: { index_top_n: 50 } },
    });
    expect(all.body.citations.map((c) => c.source)).not.toContain('docs/volcanoes.md');
  });

  it('fails a run whose container does not exist, saying so', async () => {
    await upsert(app, 'Svc.DataSource', 'dataSources', 'nowhere', {
      data_source_type: 'AzureBlob',
      container: 'no-such-container',
    });
    await upsert(app, 'Svc.DataPipeline', 'dataPipelines', 'nowhere-docs', {
      data_source_object_id: objectId('Svc.DataSource', 'dataSources', 'nowhere'),
      index_name: 'nowhere',
      embedding_ai_model_object_id: objectId('Svc.AIModel', 'aiModels', 'blob-kb-embedding'),
    });
    const run = await processPipeline(app, 'nowhere-docs');
    expect(run.status).toBe('Failed');
    expect(run.errors).toEqual([{ source: '', message: 'container no-such-container does not exist' }]);
  });
});

describe('a data pipeline run cut short', () => {
  let llm: MockLlm;
  let app: TestApp;
  let web: DocumentServer;

  beforeAll(async () => {
    llm = await startMockLlm();
    web = await serveDocuments();
    // No consumer: the test delivers the run's message itself, twice.
    app = await startTestApp({ ALLOW_PRIVATE_NETWORK: 'true' }, { consumers: false });
    const files = await documentFiles();
    for (const name of NAMES) web.files.set(`/${name}`, files[name]);
    for (let i = 0; i < 3; i++)
      web.files.set(`/extra-${i}.txt`, {
        bytes: Buffer.from(`Extra document number ${i} about topic ${randomUUID()}.`),
        type: 'text/plain',
      });
    await seedKnowledgeAgent(app, llm, 'cut-kb');
    await seedPipeline(
      app,
      'cut-kb',
      'cut-docs',
      { data_source_type: 'Web', urls: [`${web.url}/`] },
      [...web.files.keys()].map((p) => `${web.url}${p}`),
      'cut-docs',
    );
  });
  afterAll(async () => {
    await app.close();
    await web.close();
    await llm.close();
  });

  it('finishes on redelivery with every document indexed once and no duplicate partitions', async () => {
    const started = await app.call('POST', `${providers(app, 'Svc.DataPipeline')}/dataPipelines/cut-docs/process`);
    const runObjectId = (started.body as { object_id: string }).object_id;
    const message = { run: runObjectId.split('/').pop() ?? '' };
    // Each embeddings call takes a while; the worker is stopped once five have been asked for (four documents
    // indexed, the fifth in flight).
    llm.nextEmbedding(...Array.from({ length: 8 }, () => ({ hangMs: 200 })));
    const worker = new AbortController();
    const watch = setInterval(() => llm.embeddingRequests.length >= 5 && worker.abort(), 5);
    await expect(
      runPipeline(message, { id: 'm', dequeueCount: 1, signal: worker.signal }, app.services),
    ).rejects.toThrow();
    clearInterval(watch);
    const cut = await readRun(app, runObjectId);
    expect(cut.status).toBe('InProgress');
    const partial = await app.services.vectors.documents('cut-docs');
    expect(partial.length).toBeGreaterThan(0);
    expect(partial.length).toBeLessThan(8);

    llm.clear();
    await runPipeline(message, { id: 'm', dequeueCount: 2 }, app.services);
    const run = await readRun(app, runObjectId);
    expect(run.status).toBe('Completed');
    expect(run.counts).toMatchObject({
      documents: 8,
      failed_documents: 0,
      unchanged: partial.length,
      added: 8 - partial.length,
    });
    const indexed = await app.services.vectors.documents('cut-docs');
    expect(indexed).toHaveLength(8);
    const partitions = indexed.reduce((n, d) => n + d.partitions, 0);
    expect(run.counts.partitions).toBe(partitions);
    // Every partition is found once: as many distinct ids, and no text twice for one document.
    const all = await app.services.vectors.search('cut-docs', new Array<number>(256).fill(1 / 16), 1000);
    expect(all).toHaveLength(partitions);
    expect(new Set(all.map((h) => h.id)).size).toBe(partitions);
    expect(new Set(all.map((h) => `${h.source}\n${h.text}`)).size).toBe(partitions);
    // A delivery after the end changes nothing.
    await runPipeline(message, { id: 'm', dequeueCount: 3 }, app.services);
    expect((await readRun(app, runObjectId)).counts).toEqual(run.counts);
  });
});
