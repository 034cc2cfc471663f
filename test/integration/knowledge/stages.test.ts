// Data pipelines with `stages`: built-in stage plugins in order, their parameters checked on save, Markdown
// partitioning that indexes one partition per section, and a shield stage that keeps blocked partitions out.
// The built-in catalogue lists every stage with its parameters and dependencies.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockLlm, type MockLlm } from '../../../scripts/mock-llm.js';
import { startTestApp, providers, type TestApp } from '../../support/app.js';
import { INSTANCE } from '../../support/services.js';
import {
  complete,
  objectId,
  processPipeline,
  seedKnowledgeAgent,
  seedPipeline,
  serveDocuments,
  upsert,
  type DocumentServer,
} from './support.js';

const HANDBOOK = [
  '# Travel',
  'Trains are booked through the travel desk at least two weeks ahead.',
  '',
  '## Expenses',
  'Receipts for meals are filed within 30 days; the limit is 45 euros a day.',
  '',
  '## Secrets',
  'The vault combination is 7-7-1-9.',
].join('\n');

const stage = (plugin_name: string, plugin_parameters: Record<string, unknown> = {}) => ({
  plugin_name,
  plugin_parameters,
});
const STAGES = (partition: Record<string, unknown>, shield?: Record<string, unknown>) => [
  stage('Dotnet-Builtin-ExtractStage'),
  stage('Dotnet-Builtin-PartitionStage', partition),
  ...(shield ? [stage('Dotnet-Builtin-ShieldStage', shield)] : []),
  stage('Dotnet-Builtin-EmbedStage'),
  stage('Dotnet-Builtin-IndexStage'),
];

describe('data pipeline stages', () => {
  let llm: MockLlm;
  let app: TestApp;
  let web: DocumentServer;
  const pipelineUrl = (name: string) => `${providers(app, 'Svc.DataPipeline')}/dataPipelines/${name}`;
  const current = async (name: string) =>
    ((await app.call('GET', pipelineUrl(name))).body as { resource: Record<string, unknown> }).resource;

  beforeAll(async () => {
    llm = await startMockLlm();
    web = await serveDocuments();
    app = await startTestApp({ ALLOW_PRIVATE_NETWORK: 'true' });
    web.files.set('/handbook.md', { bytes: Buffer.from(HANDBOOK), type: 'text/markdown' });
    await seedKnowledgeAgent(app, llm, 'staged');
    await seedPipeline(
      app,
      'staged',
      'handbook',
      { data_source_type: 'Web', urls: [`${web.url}/`] },
      [`${web.url}/handbook.md`],
      'handbook',
    );
    await app.call(
      'POST',
      `${app.management}/instances/${INSTANCE}/providers/Svc.Configuration/appConfigurations/Svc:Shielding:Blocklist`,
      {
        body: {
          name: 'Svc:Shielding:Blocklist',
          key: 'Svc:Shielding:Blocklist',
          value: JSON.stringify(['vault combination']),
        },
      },
    );
  });
  afterAll(async () => {
    await app.close();
    await web.close();
    await llm.close();
  });

  it('lists every built-in stage with its parameters and dependencies', async () => {
    const plugins = (
      await app.call(
        'GET',
        `${app.management}/instances/${INSTANCE}/providers/Svc.Platform/plugins?api-version=2024-02-16`,
      )
    ).body as { name: string; category: string; parameters: { name: string }[]; dependencies: unknown[] }[];
    const byCategory = (c: string) =>
      plugins
        .filter((p) => p.category === c)
        .map((p) => p.name)
        .sort();
    expect(byCategory('Data Pipeline Stage')).toEqual([
      'Dotnet-Builtin-EmbedStage',
      'Dotnet-Builtin-ExtractStage',
      'Dotnet-Builtin-IndexStage',
      'Dotnet-Builtin-PartitionStage',
      'Dotnet-Builtin-ShieldStage',
    ]);
    expect(byCategory('Data Source')).toEqual([
      'Dotnet-Builtin-AzureBlobDataSource',
      'Dotnet-Builtin-AzureDataLakeDataSource',
      'Dotnet-Builtin-SharePointOnlineDataSource',
      'Dotnet-Builtin-WebDataSource',
    ]);
    expect(byCategory('Content Text Partitioning')).toEqual([
      'Dotnet-Builtin-MarkdownPartitioning',
      'Dotnet-Builtin-TokenPartitioning',
    ]);
    expect(byCategory('Content Text Extraction')).toEqual(['Dotnet-Builtin-TextExtraction']);
    expect(byCategory('Shielding')).toEqual(['Dotnet-Builtin-Blocklist', 'Dotnet-Builtin-PromptShield']);
    expect(plugins.find((p) => p.name === 'Dotnet-Builtin-PartitionStage')).toMatchObject({
      parameters: [{ name: 'partitioner' }, { name: 'partition_size_tokens' }, { name: 'partition_overlap_tokens' }],
      dependencies: [
        {
          selection_type: 'Single',
          dependency_plugin_names: ['Dotnet-Builtin-TokenPartitioning', 'Dotnet-Builtin-MarkdownPartitioning'],
        },
      ],
    });
  });

  it('indexes one partition per Markdown section, and retrieves them', async () => {
    const saved = await app.call('POST', pipelineUrl('handbook'), {
      body: {
        ...(await current('handbook')),
        stages: STAGES({ partitioner: 'Dotnet-Builtin-MarkdownPartitioning', partition_size_tokens: 200 }),
      },
    });
    expect(saved.status, JSON.stringify(saved.body)).toBe(200);
    const run = await processPipeline(app, 'handbook');
    expect(run).toMatchObject({ status: 'Completed', counts: { documents: 1, partitions: 3, added: 1 } });
    const r = await complete(app, 'staged', 'What is the daily limit for meals?');
    expect(r.status).toBe(200);
    const texts = r.body.citations.map((c) => c.text);
    expect(texts).toContain('## Expenses\nReceipts for meals are filed within 30 days; the limit is 45 euros a day.');
    expect(texts).toContain('# Travel\nTrains are booked through the travel desk at least two weeks ahead.');
  });

  it('keeps partitions a shield stage blocks out of the index, and names them in the run', async () => {
    const saved = await app.call('POST', pipelineUrl('handbook'), {
      body: {
        ...(await current('handbook')),
        stages: STAGES(
          { partitioner: 'Dotnet-Builtin-MarkdownPartitioning' },
          { shielding_plugins: ['Dotnet-Builtin-Blocklist'] },
        ),
      },
    });
    expect(saved.status, JSON.stringify(saved.body)).toBe(200);
    const run = await processPipeline(app, 'handbook');
    expect(run).toMatchObject({ status: 'Completed', counts: { partitions: 2, updated: 1 } });
    expect(run.errors).toEqual([
      {
        source: `${web.url}/handbook.md`,
        message: expect.stringMatching(/^partition 3 was not indexed: Dotnet-Builtin-Blocklist blocked it/) as string,
      },
    ]);
    const r = await complete(app, 'staged', 'What is the vault combination?');
    expect(r.body.citations.map((c) => c.text).join('\n')).not.toContain('7-7-1-9');
  });

  it('refuses stages that do not hold, naming the stage or parameter', async () => {
    const base = await current('handbook');
    const cases: [unknown, string][] = [
      [
        STAGES({ partitioner: 'Dotnet-Builtin-TextExtraction' }),
        'stages[1].plugin_parameters.partitioner: partitioner must name one of ' +
          'Dotnet-Builtin-TokenPartitioning, Dotnet-Builtin-MarkdownPartitioning',
      ],
      [
        STAGES({ partition_size_tokens: 'big' }),
        'stages[1].plugin_parameters.partition_size_tokens: partition_size_tokens must be an integer',
      ],
      [
        STAGES({ chunking: 'fast' }),
        'stages[1].plugin_parameters.chunking: chunking is not a parameter of Dotnet-Builtin-PartitionStage',
      ],
      [
        STAGES({ partition_size_tokens: 100, partition_overlap_tokens: 100 }),
        'partition_overlap_tokens must be at least 0 and less than partition_size_tokens',
      ],
      [
        STAGES({}, { shielding_plugins: [] }),
        'stages[2].plugin_parameters.shielding_plugins: shielding_plugins must name one or more of',
      ],
      [
        [
          stage('Dotnet-Builtin-PartitionStage'),
          stage('Dotnet-Builtin-ExtractStage'),
          stage('Dotnet-Builtin-EmbedStage'),
          stage('Dotnet-Builtin-IndexStage'),
        ],
        'stages[1].plugin_name: Dotnet-Builtin-ExtractStage comes out of order',
      ],
      [
        [
          stage('Dotnet-Builtin-ExtractStage'),
          stage('Dotnet-Builtin-PartitionStage'),
          stage('Dotnet-Builtin-IndexStage'),
        ],
        "stages: a pipeline's stages include Dotnet-Builtin-EmbedStage",
      ],
      [[stage('Python-acme-lookup')], 'stages[0].plugin_name: Python-acme-lookup is not a Data Pipeline Stage plugin'],
    ];
    for (const [stages, message] of cases) {
      const r = await app.call('POST', pipelineUrl('handbook'), { body: { ...base, stages } });
      expect(r.status, JSON.stringify(stages)).toBe(400);
      expect(JSON.stringify(r.body)).toContain(message);
    }
    // Nothing of them was saved.
    expect((await current('handbook')).stages).toEqual(base.stages);
  });

  it('runs a pipeline without stages as extract, partition by tokens, embed and index', async () => {
    await upsert(app, 'Svc.DataPipeline', 'dataPipelines', 'plain', {
      data_source_object_id: objectId('Svc.DataSource', 'dataSources', 'handbook-source'),
      source_paths: [`${web.url}/handbook.md`],
      index_name: 'plain',
      embedding_ai_model_object_id: objectId('Svc.AIModel', 'aiModels', 'staged-embedding'),
      partition_size_tokens: 16,
      partition_overlap_tokens: 0,
    });
    const run = await processPipeline(app, 'plain');
    expect(run.status).toBe('Completed');
    expect(run.counts.partitions).toBeGreaterThan(3);
  });
});
