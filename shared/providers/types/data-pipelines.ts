// The knowledge resource types as data: data sources (where documents come from), data pipelines (what to read,
// how to partition and embed it, and into which index) and their runs. What the service checks and does
// around their writes is in registry/rules/catalog.ts; what a run does is in knowledge/runs.ts.
import { z } from 'zod';
import { IndexName, ObjectId } from './catalog.js';
import { definition, type ResourceKind, type ResourceOf } from './resource-type.js';

/** A Blob container (or Data Lake file system) name. */
const ContainerName = z.string().regex(/^[a-z0-9](?!.*--)[a-z0-9-]{1,61}[a-z0-9]$/, 'must be a Blob container name');

/**
 * A source of documents for pipelines (docs/api-decisions.md, Knowledge). AzureBlob: a container of the service's own
 * storage, or of another account (`account_url`) read with the managed identity. Web: the URL prefixes documents may
 * come from. Both are needed to process the source, not to save it (spec-era definitions name containers in
 * `configuration`, which is read too). SharePointOnline: the site and its document libraries, read through Microsoft
 * Graph (knowledge/sharepoint.ts).
 */
export const dataSources = {
  provider: 'Svc.DataSource',
  segment: 'dataSources',
  type: 'data-source',
  schema: definition('data-source', () => ({
    data_source_type: z.enum(['AzureBlob', 'AzureDataLake', 'SharePointOnline', 'Web']),
    container: ContainerName.optional(),
    account_url: z
      .string()
      .optional()
      .describe(
        "AzureBlob: the Blob service URL of another storage account (default: the service's own); " +
          "AzureDataLake: the account's Data Lake (dfs) or Blob URL",
      ),
    filesystem: ContainerName.optional().describe('AzureDataLake: the file system (container) to read'),
    paths: z
      .array(z.string().min(1).max(1024))
      .max(100)
      .optional()
      .describe("AzureDataLake: the directories to read (default: all); a pipeline's source_paths narrow them"),
    urls: z.array(z.string()).min(1).max(100).optional().describe('Web: the URL prefixes documents may come from'),
    site_url: z
      .url({ protocol: /^https$/, error: 'must be an https URL' })
      .max(2048)
      .optional()
      .describe('SharePointOnline: the site (https://{tenant}.sharepoint.com/sites/{site})'),
    document_libraries: z
      .array(z.string().min(1).max(256))
      .min(1)
      .max(50)
      .optional()
      .describe('SharePointOnline: the document libraries to read, by name'),
    configuration: z
      .object({
        connection_string_secret_name: z
          .string()
          .min(1)
          .max(256)
          .optional()
          .describe(
            "AzureBlob, AzureDataLake: the SVC_SECRET_ setting holding the account's connection string " +
              '(instead of the managed identity); a run that cannot read it fails saying so',
          ),
        containers: z.array(ContainerName).max(50).optional().describe('AzureBlob: every container to read'),
      })
      .strict()
      .default({}),
  })).superRefine((d, ctx) => {
    const storage = d.data_source_type === 'AzureBlob' || d.data_source_type === 'AzureDataLake';
    const only = (types: string, ok: boolean, fields: (keyof typeof d)[]) => {
      for (const f of fields)
        if (!ok && d[f] !== undefined)
          ctx.addIssue({ code: 'custom', path: [f], message: `valid only for ${types} data source` });
    };
    only('an AzureBlob', d.data_source_type === 'AzureBlob', ['container']);
    only('an AzureBlob or AzureDataLake', storage, ['account_url']);
    only('an AzureDataLake', d.data_source_type === 'AzureDataLake', ['filesystem', 'paths']);
    only('a Web', d.data_source_type === 'Web', ['urls']);
    only('a SharePointOnline', d.data_source_type === 'SharePointOnline', ['site_url', 'document_libraries']);
    if (
      !storage &&
      (d.configuration.connection_string_secret_name !== undefined || d.configuration.containers !== undefined)
    ) {
      ctx.addIssue({
        code: 'custom',
        path: ['configuration'],
        message:
          'connection_string_secret_name and containers are valid only for AzureBlob and AzureDataLake data sources',
      });
    }
    if (d.account_url !== undefined && d.configuration.connection_string_secret_name !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['account_url'],
        message: 'name the account by account_url (managed identity) or by connection_string_secret_name, not both',
      });
    }
  }),
} satisfies ResourceKind;

/** One stage of a data pipeline: a built-in Data Pipeline Stage plugin and its parameters (knowledge/stages.ts). */
export const Stage = z
  .object({
    plugin_name: z
      .string()
      .min(1)
      .describe(
        'A Data Pipeline Stage plugin: Dotnet-Builtin-ExtractStage, -PartitionStage, -ShieldStage, ' +
          '-EmbedStage or -IndexStage',
      ),
    plugin_parameters: z
      .record(z.string(), z.unknown())
      .default({})
      .describe("The stage's parameters, as the plugin declares them"),
  })
  .strict();
export type Stage = z.output<typeof Stage>;

/** What to read from a data source, how to partition it, which model embeds it, and the index. */
export const dataPipelines = {
  provider: 'Svc.DataPipeline',
  segment: 'dataPipelines',
  type: 'data-pipeline',
  schema: definition('data-pipeline', () => ({
    data_source_object_id: ObjectId,
    source_paths: z
      .array(z.string().min(1).max(2048))
      .max(1000)
      .default([])
      .describe('Blob name prefixes, or for Web the document URLs'),
    index_name: IndexName,
    embedding_ai_model_object_id: ObjectId,
    embedding_dimensions: z.number().int().min(1).max(8192).optional(),
    partition_size_tokens: z.number().int().min(16).max(8192).default(400),
    partition_overlap_tokens: z.number().int().min(0).max(8191).default(100),
    stages: z
      .array(Stage)
      .min(1)
      .max(10)
      .optional()
      .describe(
        'Data Pipeline Stage plugins in the order they run, with their parameters (docs/plugins.md); absent: ' +
          'extract, partition, embed, index with the settings above',
      ),
    trigger_type: z
      .enum(['Manual', 'Schedule', 'Event'], { error: 'trigger_type must be Manual, Schedule or Event' })
      .default('Manual')
      .describe(
        'Manual: runs when processed by hand; Schedule: also at each due time of trigger_cron; Event: also ' +
          'for each blob created or deleted in the source (AzureBlob, AzureDataLake)',
      ),
    trigger_cron: z
      .string()
      .max(200)
      .optional()
      .describe('Schedule: five cron fields (minute hour day-of-month month day-of-week), UTC'),
  }))
    .refine((d) => d.partition_overlap_tokens < d.partition_size_tokens, {
      path: ['partition_overlap_tokens'],
      message: 'must be less than partition_size_tokens',
    })
    .superRefine((d, ctx) => {
      if (d.trigger_type === 'Schedule') {
        // The expression itself is checked by the pipeline's rules (registry/rules/catalog.ts).
        if (d.trigger_cron === undefined)
          ctx.addIssue({
            code: 'custom',
            path: ['trigger_cron'],
            message: 'trigger_cron is required when trigger_type is Schedule',
          });
      } else if (d.trigger_cron !== undefined)
        ctx.addIssue({ code: 'custom', path: ['trigger_cron'], message: 'valid only when trigger_type is Schedule' });
    }),
} satisfies ResourceKind;

const RunCountsSchema = z.object({
  documents: z.number().int(),
  partitions: z.number().int(),
  failed_documents: z.number().int(),
  added: z.number().int(),
  updated: z.number().int(),
  unchanged: z.number().int(),
  removed: z.number().int(),
});

/** One execution of a pipeline, written by the service only (`process` starts one). */
export const dataPipelineRuns = {
  provider: 'Svc.DataPipeline',
  segment: 'dataPipelineRuns',
  type: 'data-pipeline-run',
  serviceWritten: true,
  schema: definition('data-pipeline-run', () => ({
    data_pipeline_object_id: ObjectId,
    status: z.enum(['Pending', 'InProgress', 'Completed', 'Failed']),
    started_on: z.string().nullable(),
    completed_on: z.string().nullable(),
    counts: RunCountsSchema,
    usage: z
      .object({ embedding_tokens: z.number().int(), cost: z.number(), currency: z.string().nullable() })
      .optional()
      .describe(
        'Set by the service when the run ends: the tokens its embeddings took and what they cost at the ' +
          "embedding model's prices",
      ),
    errors: z.array(z.object({ source: z.string(), message: z.string() })),
    reading: z
      .array(z.string())
      .optional()
      .describe('Set by the service: the documents being read (a redelivered run skips them)'),
    documents: z
      .array(z.string())
      .max(1000)
      .optional()
      .describe(
        'Set by the service: the only documents an event-triggered run reads (or removes, when the source no ' +
          'longer has them)',
      ),
    delta: z
      .object({ settings: z.string(), links: z.record(z.string(), z.string()) })
      .optional()
      .describe(
        "Set by the service: where the next run of a SharePointOnline source reads changes from (Graph's " +
          'delta link per library), and the settings it indexed with',
      ),
  })),
} satisfies ResourceKind;

export type DataSourceDoc = ResourceOf<typeof dataSources>;
export type DataPipelineDoc = ResourceOf<typeof dataPipelines>;
export type DataPipelineRunDoc = ResourceOf<typeof dataPipelineRuns>;
