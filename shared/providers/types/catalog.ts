// Definitions of the configuration resource types: workflows, tools, prompts, data sources, data pipelines
// and their runs, AI models, app configurations and API endpoint configurations.
import { z } from 'zod';
import { SECRET_NAME, SECRET_NAME_RULE } from '../../config.js';
import { thresholdProblem } from '../../analytics/abuse.js';
import { parseQuotaDefinitions, QUOTA_SETTING } from '../../completions/quotas.js';
import { badRequest, validationError } from '../../errors.js';
import { dropPipelineDocuments } from '../../knowledge/runs.js';
import { resolvesOutside, savedUrlProblem, urlProblem } from '../../net/outbound.js';
import { allowedScopes, identityProblem } from '../../models/credentials.js';
import { ApiEndpointFields, checkEndpoint } from '../../models/endpoint.js';
import { ModelParametersFields } from '../../models/parameters.js';
import { brandingProblem } from '../branding.js';
import { APP_CONFIG_PK, maskSecret, rotated } from '../settings.js';
import { definition, type HookContext, type ResourceType } from '../resource-type.js';
import { BLOCKLIST_SETTING, compileBlocklist } from '../../shielding/blocklist.js';
import { checkWorkflowLinks } from './agent-links.js';
import { PLATFORM_MEMORY } from '../../tools/mcp.js';

/** Settings the service reads whose values have rules (shielding's blocklist, quotas, abuse thresholds). */
function settingProblem(key: string, value: string): string | undefined {
  // Without case, as settings are read.
  const id = key.toLowerCase();
  const parsed = id === BLOCKLIST_SETTING.toLowerCase() ? compileBlocklist(value) : id === QUOTA_SETTING.toLowerCase() ? parseQuotaDefinitions(value) : undefined;
  return typeof parsed === 'string' ? parsed : thresholdProblem(key, value);
}

const ObjectId = z.string().regex(/^\/instances\/[^/]+\/providers\/Svc\.[A-Za-z]+\/[A-Za-z]+\/[^/]+$/, 'must be a resource object id');

export const workflows: ResourceType = {
  provider: 'Svc.Agent',
  segment: 'workflows',
  type: 'workflow',
  schema: definition('workflow', {
    workflow_type: z.enum(['chat'], { error: 'workflow_type must be chat (the built-in chat workflow)' }),
    workflow_host: z.enum(['builtin'], { error: 'workflow_host must be builtin' }),
    main_ai_model_object_id: ObjectId,
    main_prompt_object_id: ObjectId,
  }),
  validate: (definition, { services }) => checkWorkflowLinks(services, definition),
};

/** Knowledge index names (CONTRACT 10.6): letters, digits, `-` and `_`. */
export const IndexName = z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, 'must be 1 to 128 letters, digits, hyphens or underscores');

const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * What an agent can use: a knowledge index (CONTRACT 10.6; retrieved on every completion, or offered to the
 * model as a search function with `retrieval: on_demand`), a Model Context Protocol server's allow-listed
 * tools (`mcp`), or a plugin (catalogued; no plugin runtime runs package code, so an agent cannot name one).
 */
export const tools: ResourceType = {
  provider: 'Svc.Agent',
  segment: 'tools',
  type: 'tool',
  schema: definition('tool', {
    tool_type: z.enum(['plugin', 'knowledge', 'mcp'], { error: 'tool_type must be plugin, knowledge or mcp' }),
    plugin_object_id: z.string().optional(),
    index_name: IndexName.optional(),
    top_n: z.number().int().min(1).max(50).optional().describe('Partitions retrieved per completion (knowledge tools; default 5)'),
    retrieval: z.enum(['always', 'on_demand']).optional().describe('knowledge tools: retrieve for every completion (default), or let the model search when it needs to'),
    url: z.string().optional().describe(`mcp: the streamable HTTP endpoint of the server, or ${PLATFORM_MEMORY} for the memory tool server of spec 4.2 (in process, for the agent and user of the completion)`),
    allowed_tools: z.array(z.string().regex(TOOL_NAME, 'tool names are 1 to 64 letters, digits, _ or -')).min(1).max(64).optional().describe("mcp: the server's tools the model may call"),
    authentication_type: z.enum(['None', 'APIKey', 'AzureIdentity']).optional(),
    headers: z
      .record(z.string().regex(/^x-[a-z0-9-]{1,60}$/i, 'header names start with x-'), z.literal('context://user_identity', { error: 'header values can only be context://user_identity (the signed-in user)' }))
      .optional()
      .describe('mcp: headers resolved at run time (context://user_identity: the signed-in user as base64 JSON)'),
    authentication_parameters: z.object({ api_key_secret_name: z.string().regex(SECRET_NAME, SECRET_NAME_RULE).optional(), scope: z.string().optional() }).strict().optional(),
  }).superRefine((d, ctx) => {
    const only = (type: string, fields: (keyof typeof d)[]) => {
      for (const f of fields) if (d.tool_type !== type && d[f] !== undefined) ctx.addIssue({ code: 'custom', path: [f], message: `valid only for a ${type} tool` });
    };
    only('knowledge', ['index_name', 'top_n', 'retrieval']);
    only('mcp', ['url', 'allowed_tools', 'authentication_type', 'authentication_parameters', 'headers']);
    if (d.tool_type === 'knowledge' && d.index_name === undefined) ctx.addIssue({ code: 'custom', path: ['index_name'], message: 'index_name is required for a knowledge tool' });
    if (d.tool_type === 'mcp' && d.url === undefined) ctx.addIssue({ code: 'custom', path: ['url'], message: 'url is required for an mcp tool' });
    if (d.tool_type === 'mcp' && d.allowed_tools === undefined) ctx.addIssue({ code: 'custom', path: ['allowed_tools'], message: "allowed_tools is required for an mcp tool: the server's tools the model may call" });
    if (d.authentication_type === 'APIKey' && !d.authentication_parameters?.api_key_secret_name) {
      ctx.addIssue({ code: 'custom', path: ['authentication_parameters', 'api_key_secret_name'], message: 'required when authentication_type is APIKey' });
    }
  }),
  computed: (d) => (d.tool_type === 'knowledge' ? { top_n: d.top_n ?? 5, retrieval: d.retrieval ?? 'always' } : {}),
  // The server URL follows the user-URL rules (CONTRACT 10.1); managed-identity tokens only for allowed scopes.
  validate: async (d, { services }) => {
    if (typeof d.url !== 'string' || d.url === PLATFORM_MEMORY) return;
    const problem = await savedUrlProblem(d.url, { policy: 'user', allowPrivateNetwork: services.config.allowPrivateNetwork });
    if (problem) throw validationError([{ field: 'url', message: `url ${problem}` }]);
    const scope = (d.authentication_parameters as { scope?: string } | undefined)?.scope;
    if (d.authentication_type === 'AzureIdentity') {
      if (scope !== undefined && !allowedScopes(services.config).includes(scope)) {
        throw validationError([{ field: 'authentication_parameters.scope', message: `scope must be one of ${allowedScopes(services.config).join(', ')}` }]);
      }
      const problem = identityProblem(d.url, scope, services.gate, services.config);
      if (problem) throw validationError([{ field: 'url', message: problem }]);
    }
  },
};

export const prompts: ResourceType = {
  provider: 'Svc.Prompt',
  segment: 'prompts',
  type: 'prompt',
  schema: definition('prompt', { category: z.string().optional(), prefix: z.string(), suffix: z.string().optional() }),
};

/** User URLs of a data source: the outbound rules of CONTRACT 10.1, names resolved on save too. */
async function checkSourceUrls(d: Record<string, unknown>, { services }: HookContext): Promise<void> {
  const rules = { policy: 'user' as const, allowPrivateNetwork: services.config.allowPrivateNetwork };
  const urls = [...((d.urls as string[] | undefined) ?? []).map((u, i) => [`urls[${i}]`, u] as const), ...(typeof d.account_url === 'string' ? [['account_url', d.account_url] as const] : [])];
  for (const [field, url] of urls) {
    const problem = await savedUrlProblem(url, rules);
    if (problem) throw validationError([{ field, message: `${field} ${problem}` }]);
  }
  // The account receives the managed identity's Storage token: only an https Azure Storage host may.
  const accountProblem = typeof d.account_url === 'string' ? services.gate.urlProblem('storage', d.account_url) : undefined;
  if (accountProblem) throw validationError([{ field: 'account_url', message: `account_url ${accountProblem}` }]);
}

/**
 * CONTRACT 10.6. AzureBlob: a container of the service's own storage, or of another account (`account_url`)
 * read with the managed identity. Web: the URL prefixes documents may come from. Both are needed to process
 * the source, not to save it (spec-era definitions name containers in `configuration`, which is read too).
 * SharePointOnline and AzureDataLake are definitions only for now: processing them is a 400.
 */
export const dataSources: ResourceType = {
  provider: 'Svc.DataSource',
  segment: 'dataSources',
  type: 'data-source',
  schema: definition('data-source', {
    data_source_type: z.enum(['AzureBlob', 'AzureDataLake', 'SharePointOnline', 'Web']),
    container: z.string().regex(/^[a-z0-9](?!.*--)[a-z0-9-]{1,61}[a-z0-9]$/, 'must be a Blob container name').optional(),
    account_url: z.string().optional().describe('Blob service URL of another storage account (default: the service\'s own)'),
    urls: z.array(z.string()).min(1).max(100).optional().describe('Web: the URL prefixes documents may come from'),
    configuration: z
      .object({ connection_string_secret_name: z.string().optional(), containers: z.array(z.string()).optional() })
      .strict()
      .default({}),
  }).superRefine((d, ctx) => {
    if (d.data_source_type !== 'AzureBlob' && (d.container !== undefined || d.account_url !== undefined)) {
      ctx.addIssue({ code: 'custom', path: [d.container !== undefined ? 'container' : 'account_url'], message: 'valid only for an AzureBlob data source' });
    }
    if (d.data_source_type !== 'Web' && d.urls !== undefined) ctx.addIssue({ code: 'custom', path: ['urls'], message: 'valid only for a Web data source' });
  }),
  validate: checkSourceUrls,
};

/** CONTRACT 10.6: what to read from a data source, how to partition it, which model embeds it, and the index. */
export const dataPipelines: ResourceType = {
  provider: 'Svc.DataPipeline',
  segment: 'dataPipelines',
  type: 'data-pipeline',
  schema: definition('data-pipeline', {
    data_source_object_id: ObjectId,
    source_paths: z.array(z.string().min(1).max(2048)).max(1000).default([]).describe('Blob name prefixes, or for Web the document URLs'),
    index_name: IndexName,
    embedding_ai_model_object_id: ObjectId,
    embedding_dimensions: z.number().int().min(1).max(8192).optional(),
    partition_size_tokens: z.number().int().min(16).max(8192).default(400),
    partition_overlap_tokens: z.number().int().min(0).max(8191).default(100),
  }).refine((d) => d.partition_overlap_tokens < d.partition_size_tokens, { path: ['partition_overlap_tokens'], message: 'must be less than partition_size_tokens' }),
  // A purged pipeline takes what it indexed with it.
  afterPurge: (doc, { services }) => dropPipelineDocuments(services, doc),
};

const RunCountsSchema = z.object({
  documents: z.number().int(),
  partitions: z.number().int(),
  failed_documents: z.number().int(),
  added: z.number().int(),
  updated: z.number().int(),
  unchanged: z.number().int(),
  removed: z.number().int(),
});

/** CONTRACT 10.6: one execution of a pipeline, written by the service only (`process` starts one). */
export const dataPipelineRuns: ResourceType = {
  provider: 'Svc.DataPipeline',
  segment: 'dataPipelineRuns',
  type: 'data-pipeline-run',
  serviceWritten: true,
  schema: definition('data-pipeline-run', {
    data_pipeline_object_id: ObjectId,
    status: z.enum(['Pending', 'InProgress', 'Completed', 'Failed']),
    started_on: z.string().nullable(),
    completed_on: z.string().nullable(),
    counts: RunCountsSchema,
    errors: z.array(z.object({ source: z.string(), message: z.string() })),
  }),
};

export const aiModels: ResourceType = {
  provider: 'Svc.AIModel',
  segment: 'aiModels',
  type: 'ai-model',
  schema: definition('ai-model', {
    model_type: z.enum(['completion', 'embedding']),
    deployment_name: z.string().min(1),
    api_endpoint_object_id: ObjectId,
    model_parameters: ModelParametersFields.optional(),
    /** Prices used for `total_cost` (currency of your choice, per 1,000 tokens); 0 when absent. */
    cost_per_1k_prompt_tokens: z.number().min(0).optional(),
    cost_per_1k_completion_tokens: z.number().min(0).optional(),
  }),
};

export const appConfigurations: ResourceType = {
  provider: 'Svc.Configuration',
  segment: 'appConfigurations',
  type: 'app-configuration',
  schema: definition('app-configuration', { key: z.string().min(1), value: z.string(), content_type: z.string().optional() })
    .refine((d) => d.key === d.name, { path: ['key'], message: 'key must equal the resource name' })
    .superRefine((d, ctx) => {
      const problem = brandingProblem(d.key, d.value) ?? settingProblem(d.key, d.value);
      if (problem) ctx.addIssue({ code: 'custom', path: ['value'], message: `${d.key} ${problem}` });
    }),
  // A secret setting keeps the value a change replaced valid for a while (rotation), and is never shown.
  computed: (d, existing) => rotated(String(d.key), d.value, existing),
  present: maskSecret,
  afterChange: (doc, { services }) => {
    if (doc.pk === APP_CONFIG_PK) services.settings.invalidate(doc.name);
  },
};

export const apiEndpointConfigurations: ResourceType = {
  provider: 'Svc.Configuration',
  segment: 'apiEndpointConfigurations',
  type: 'api-endpoint',
  schema: definition('api-endpoint', ApiEndpointFields).superRefine(checkEndpoint),
  validate: async (d, { services, principal }) => {
    // Managed-identity tokens only for allowed scopes, and only to their audience's hosts.
    if (d.authentication_type === 'AzureIdentity') {
      const problem = identityProblem(String(d.url), (d.authentication_parameters as { scope?: string }).scope, services.gate, services.config);
      if (problem) throw badRequest(problem);
    }
    // Loopback and private addresses (local model servers) only from a principal who may assign roles at the
    // instance (an Owner): a Contributor could otherwise map the private network through the errors of calls.
    // The endpoint keeps what its saver was allowed: its calls connect under those rules.
    d.private_network = await pointsInside(String(d.url));
    if (d.private_network && !services.config.allowPrivateNetwork && !(await services.authorizer.can(principal, 'Svc.Authorization/roleAssignments/write', `/instances/${services.config.instanceId}`))) {
      throw validationError([{ field: 'url', message: 'url points to a loopback or private network address: only an Owner (who may assign roles at the instance) may save such an endpoint' }]);
    }
  },
};

/** Whether a URL names a loopback or private address, or a name that resolves to one now. */
async function pointsInside(url: string): Promise<boolean> {
  const strict = { policy: 'user' as const, allowPrivateNetwork: false };
  return urlProblem(url.replace(/^http:/, 'https:'), strict) !== undefined || (await resolvesOutside(new URL(url).hostname, strict));
}
