// Definitions of the configuration resource types: workflows, tools, prompts, data sources, data pipelines
// and their runs, AI models, app configurations and API endpoint configurations.
import { z } from 'zod';
import { badRequest } from '../../http/errors.js';
import { allowedScopes, identityProblem } from '../../models/credentials.js';
import { ApiEndpointFields, checkEndpoint } from '../../models/endpoint.js';
import { brandingProblem } from '../branding.js';
import { APP_CONFIG_PK } from '../settings.js';
import { definition, type ResourceType } from '../resource-type.js';

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
};

export const tools: ResourceType = {
  provider: 'Svc.Agent',
  segment: 'tools',
  type: 'tool',
  schema: definition('tool', {
    tool_type: z.enum(['plugin'], { error: 'tool_type must be plugin' }),
    plugin_object_id: z.string().optional(),
  }),
};

export const prompts: ResourceType = {
  provider: 'Svc.Prompt',
  segment: 'prompts',
  type: 'prompt',
  schema: definition('prompt', { category: z.string().optional(), prefix: z.string(), suffix: z.string().optional() }),
};

export const dataSources: ResourceType = {
  provider: 'Svc.DataSource',
  segment: 'dataSources',
  type: 'data-source',
  schema: definition('data-source', {
    data_source_type: z.enum(['AzureBlob', 'AzureDataLake', 'SharePointOnline', 'Web']),
    configuration: z
      .object({ connection_string_secret_name: z.string().optional(), containers: z.array(z.string()).optional() })
      .strict()
      .default({}),
  }),
};

/** Design (spec: "not shown"): a pipeline reads a data source and runs plugin stages in order. */
export const dataPipelines: ResourceType = {
  provider: 'Svc.DataPipeline',
  segment: 'dataPipelines',
  type: 'data-pipeline',
  schema: definition('data-pipeline', {
    data_source_object_id: ObjectId,
    stages: z.array(z.object({ name: z.string().min(1), plugin_object_id: z.string().min(1), parameters: z.record(z.string(), z.unknown()).optional() }).strict()).min(1),
    trigger_type: z.enum(['Manual', 'Schedule', 'Event']).default('Manual'),
    active: z.boolean().default(true),
  }),
};

/** Design (spec: "not shown"): the record of one pipeline execution. */
export const dataPipelineRuns: ResourceType = {
  provider: 'Svc.DataPipeline',
  segment: 'dataPipelineRuns',
  type: 'data-pipeline-run',
  schema: definition('data-pipeline-run', {
    data_pipeline_object_id: ObjectId,
    status: z.enum(['Pending', 'Running', 'Completed', 'Failed']).default('Pending'),
    parameters: z.record(z.string(), z.unknown()).optional(),
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
    model_parameters: z
      .object({ temperature: z.number().min(0).max(1).optional(), max_new_tokens: z.number().int().positive().optional(), top_p: z.number().min(0).max(1).optional() })
      .strict()
      .optional(),
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
      const problem = brandingProblem(d.key, d.value);
      if (problem) ctx.addIssue({ code: 'custom', path: ['value'], message: `${d.key} ${problem}` });
    }),
  afterChange: (doc, { services }) => {
    if (doc.pk === APP_CONFIG_PK) services.settings.invalidate(doc.name);
  },
};

export const apiEndpointConfigurations: ResourceType = {
  provider: 'Svc.Configuration',
  segment: 'apiEndpointConfigurations',
  type: 'api-endpoint',
  schema: definition('api-endpoint', ApiEndpointFields).superRefine(checkEndpoint),
  // Managed-identity tokens only for allowed scopes, and Cognitive Services tokens only to Azure AI hosts.
  validate: (d, { services }) => {
    if (d.authentication_type !== 'AzureIdentity') return Promise.resolve();
    const problem = identityProblem(String(d.url), (d.authentication_parameters as { scope?: string }).scope, allowedScopes(services.config));
    return problem ? Promise.reject(badRequest(problem)) : Promise.resolve();
  },
};
