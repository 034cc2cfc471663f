// Scheduled pipelines: trigger_cron checked on save; a run started for a due time, once however many
// instances look at the same moment, by the scheduler; none for a due time long missed or before the pipeline
// existed; a pipeline whose source cannot be read gets a Failed run saying why.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockLlm, type MockLlm } from '../../../scripts/mock-llm.js';
import { lastDue } from '../../../shared/knowledge/cron.js';
import { scheduledRunName, startDueRuns, SCHEDULER } from '../../../shared/knowledge/schedule.js';
import { providers, startTestApp, type TestApp } from '../../support/app.js';
import { TEXTS } from '../../support/documents.js';
import { objectId, readRun, seedKnowledgeAgent, seedPipeline, upsert } from './support.js';
import { containerOf } from '../../support/storage.js';

describe('scheduled data pipelines', () => {
  let llm: MockLlm;
  let app: TestApp;
  const container = `sched-${randomUUID().slice(0, 8)}`;
  const pipeline = (name: string) =>
    app
      .call('GET', `${providers(app, 'Svc.DataPipeline')}/dataPipelines/${name}`)
      .then((r) => (r.body as { resource: { object_id: string; created_on: string } }).resource);
  const save = (name: string, extra: Record<string, unknown>) =>
    app.call('POST', `${providers(app, 'Svc.DataPipeline')}/dataPipelines/${name}`, {
      body: {
        name,
        data_source_object_id: objectId('Svc.DataSource', 'dataSources', 'nightly-source'),
        index_name: 'nightly',
        embedding_ai_model_object_id: objectId('Svc.AIModel', 'aiModels', 'sched-kb-embedding'),
        source_paths: ['docs/'],
        ...extra,
      },
    });

  beforeAll(async () => {
    llm = await startMockLlm();
    app = await startTestApp({ ALLOW_PRIVATE_NETWORK: 'true' });
    await containerOf(app.services, container).create();
    await containerOf(app.services, container)
      .getBlockBlobClient('docs/penguins.txt')
      .uploadData(Buffer.from(TEXTS['penguins.txt']));
    await seedKnowledgeAgent(app, llm, 'sched-kb');
    await seedPipeline(app, 'sched-kb', 'nightly', { data_source_type: 'AzureBlob', container }, ['docs/'], 'nightly');
  });
  afterAll(async () => {
    await app.close();
    await llm.close();
  });

  it('checks trigger_cron on save: five valid fields, only with Schedule', async () => {
    for (const [extra, message] of [
      [{ trigger_type: 'Schedule' }, 'trigger_cron is required'],
      [{ trigger_type: 'Schedule', trigger_cron: '0 0 2 * * *' }, 'it takes five'],
      [{ trigger_type: 'Schedule', trigger_cron: '61 * * * *' }, 'not a valid cron expression'],
      [{ trigger_cron: '0 2 * * *' }, 'valid only when trigger_type is Schedule'],
      [{ trigger_type: 'Hourly' }, 'trigger_type must be Manual, Schedule or Event'],
    ] as const) {
      const r = await save('refused', extra);
      expect(r.status, JSON.stringify(extra)).toBe(400);
      expect(JSON.stringify(r.body)).toContain(message);
    }
    expect(
      (
        await save('nightly', {
          trigger_type: 'Schedule',
          trigger_cron: '*/5 * * * *',
          partition_size_tokens: 64,
          partition_overlap_tokens: 16,
        })
      ).status,
    ).toBe(200);
  });

  it('starts one run per due time, however many instances look at once, and the run indexes the source', async () => {
    const p = await pipeline('nightly');
    // The next due time after the pipeline was saved, seen 10 s late by four instances at once.
    const due = new Date(lastDue('*/5 * * * *', new Date(Date.parse(p.created_on) + 5 * 60_000)));
    const now = new Date(due.getTime() + 10_000);
    const started = await Promise.all([1, 2, 3, 4].map(() => startDueRuns(app.services, now)));
    expect(started.reduce((a, b) => a + b, 0)).toBe(1);
    expect(await startDueRuns(app.services, new Date(now.getTime() + 30_000))).toBe(0);
    const runId = objectId('Svc.DataPipeline', 'dataPipelineRuns', scheduledRunName(p.object_id, due));
    await expect.poll(async () => (await readRun(app, runId)).status, { timeout: 30_000 }).toBe('Completed');
    const run = await readRun(app, runId);
    expect(run.counts).toMatchObject({ documents: 1, added: 1 });
    const raw = (await app.call('GET', `${app.management}${runId}`)).body as { resource: { created_by: string } };
    expect(raw.resource.created_by).toBe(SCHEDULER);
    // The next due time starts the next run.
    expect(await startDueRuns(app.services, new Date(due.getTime() + 5 * 60_000 + 1000))).toBe(1);
  });

  it('skips a due time missed for more than ten minutes, and one before the pipeline existed', async () => {
    expect((await save('hourly', { trigger_type: 'Schedule', trigger_cron: '0 * * * *' })).status).toBe(200);
    const p = await pipeline('hourly');
    const exists = async (due: Date) =>
      (
        await app.call(
          'GET',
          `${app.management}${objectId('Svc.DataPipeline', 'dataPipelineRuns', scheduledRunName(p.object_id, due))}`,
        )
      ).status === 200;
    const due = lastDue('0 * * * *', new Date(Date.parse(p.created_on) + 2 * 60 * 60_000));
    await startDueRuns(app.services, new Date(due.getTime() + 11 * 60_000));
    expect(await exists(due)).toBe(false);
    const before = lastDue('0 * * * *', new Date(Date.parse(p.created_on)));
    await startDueRuns(app.services, new Date(before.getTime() + 1000));
    expect(await exists(before)).toBe(false);
    // Within the ten minutes, it starts.
    await startDueRuns(app.services, new Date(due.getTime() + 9 * 60_000));
    expect(await exists(due)).toBe(true);
  });

  it('records a Failed run saying why when the pipeline cannot run at its due time', async () => {
    await upsert(app, 'Svc.DataSource', 'dataSources', 'broken-source', { data_source_type: 'AzureBlob' });
    const saved = await app.call('POST', `${providers(app, 'Svc.DataPipeline')}/dataPipelines/broken`, {
      body: {
        name: 'broken',
        data_source_object_id: objectId('Svc.DataSource', 'dataSources', 'broken-source'),
        index_name: 'broken',
        embedding_ai_model_object_id: objectId('Svc.AIModel', 'aiModels', 'sched-kb-embedding'),
        trigger_type: 'Schedule',
        trigger_cron: '0 * * * *',
      },
    });
    expect(saved.status).toBe(200);
    const p = await pipeline('broken');
    const due = lastDue('0 * * * *', new Date(Date.parse(p.created_on) + 60 * 60_000));
    expect(await startDueRuns(app.services, new Date(due.getTime() + 5000))).toBeGreaterThanOrEqual(1);
    const run = await readRun(
      app,
      objectId('Svc.DataPipeline', 'dataPipelineRuns', scheduledRunName(p.object_id, due)),
    );
    expect(run.status).toBe('Failed');
    expect(JSON.stringify(run.errors)).toContain('needs a container');
  });
});
