// The configuration resource types as data: workflows, tools, prompts, AI models, app configurations and API
// endpoint configurations (data sources, pipelines and their runs are in data-pipelines.ts). What the service
// checks and does around their writes is in registry/rules/catalog.ts.
import { z } from 'zod';
import { SECRET_NAME, SECRET_NAME_RULE } from '../../config.js';
import { definition, type ResourceKind, type ResourceOf } from './resource-type.js';
import { ApiEndpointFields, checkEndpoint, ModelParametersFields } from './model-fields.js';

/** The object id of one resource of this instance's provider tree. */
export const ObjectId = z
  .string()
  .regex(/^\/instances\/[^/]+\/providers\/Svc\.[A-Za-z]+\/[A-Za-z]+\/[^/]+$/, 'must be a resource object id');

export const workflows = {
  provider: 'Svc.Agent',
  segment: 'workflows',
  type: 'workflow',
  schema: definition('workflow', () => ({
    workflow_type: z.enum(['chat', 'external'], {
      error: 'workflow_type must be chat (the built-in chat workflow) or external (an agent workflow plugin)',
    }),
    workflow_host: z.enum(['builtin'], { error: 'workflow_host must be builtin' }),
    main_ai_model_object_id: ObjectId.optional().describe('chat: the completion model (required)'),
    main_prompt_object_id: ObjectId.optional().describe('chat: the system prompt (required)'),
    plugin_object_id: z
      .string()
      .optional()
      .describe('external: the object id of an agent workflow plugin, run for each completion (docs/plugins.md)'),
  })).superRefine((d, ctx) => {
    if (d.workflow_type === 'chat') {
      for (const f of ['main_ai_model_object_id', 'main_prompt_object_id'] as const)
        if (d[f] === undefined)
          ctx.addIssue({ code: 'custom', path: [f], message: `${f} is required for a chat workflow` });
      if (d.plugin_object_id !== undefined)
        ctx.addIssue({ code: 'custom', path: ['plugin_object_id'], message: 'valid only for an external workflow' });
    } else if (d.plugin_object_id === undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['plugin_object_id'],
        message: 'plugin_object_id is required for an external workflow',
      });
  }),
} satisfies ResourceKind;

/** Knowledge index names: letters, digits, `-` and `_`. */
export const IndexName = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,128}$/, 'must be 1 to 128 letters, digits, hyphens or underscores');

const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** The URL of an mcp tool served in process: the memory tool server, for the agent and user of the call. */
export const PLATFORM_MEMORY = 'platform://memory';

/**
 * What an agent can use: a knowledge index (docs/api-decisions.md, Knowledge; retrieved on every completion, or offered
 * to the model as a search function with `retrieval: on_demand`), a Model Context Protocol server's allow-listed tools
 * (`mcp`), an agent tool plugin run in the Python sandbox (`plugin`), or the code interpreter (`code-interpreter`:
 * Python code the model writes, run in the same sandbox; docs/plugins.md).
 */
export const tools = {
  provider: 'Svc.Agent',
  segment: 'tools',
  type: 'tool',
  schema: definition('tool', () => ({
    tool_type: z.enum(['plugin', 'knowledge', 'mcp', 'code-interpreter'], {
      error: 'tool_type must be plugin, knowledge, mcp or code-interpreter',
    }),
    plugin_object_id: z
      .string()
      .optional()
      .describe(
        'plugin: the object id of an agent tool plugin (/instances/{id}/providers/Svc.Platform/plugins/{name})',
      ),
    index_name: IndexName.optional(),
    top_n: z
      .number()
      .int()
      .min(1)
      .max(50)
      .optional()
      .describe('Partitions retrieved per completion (knowledge tools; default 5)'),
    retrieval: z
      .enum(['always', 'on_demand'])
      .optional()
      .describe('knowledge tools: retrieve for every completion (default), or let the model search when it needs to'),
    search_mode: z
      .enum(['vector', 'hybrid'], { error: 'search_mode must be vector or hybrid' })
      .optional()
      .describe(
        'knowledge tools: vector similarity alone (default), or hybrid: full-text (BM25) and vector rankings ' +
          'fused by reciprocal rank, so exact tokens such as part numbers are found',
      ),
    minimum_score: z
      .number()
      .min(-1)
      .max(1)
      .optional()
      .describe(
        'knowledge tools: partitions whose similarity (cosine, -1 to 1) is below it are neither given to the ' +
          'model nor cited',
      ),
    url: z
      .string()
      .optional()
      .describe(
        `mcp: the streamable HTTP endpoint of the server, or ${PLATFORM_MEMORY} for the memory tool server ` +
          `(in process, for the agent and user of the completion)`,
      ),
    allowed_tools: z
      .array(z.string().regex(TOOL_NAME, 'tool names are 1 to 64 letters, digits, _ or -'))
      .min(1)
      .max(64)
      .optional()
      .describe("mcp: the server's tools the model may call"),
    authentication_type: z.enum(['None', 'APIKey', 'AzureIdentity']).optional(),
    headers: z
      .record(
        z.string().regex(/^x-[a-z0-9-]{1,60}$/i, 'header names start with x-'),
        z.literal('context://user_identity', {
          error: 'header values can only be context://user_identity (the signed-in user)',
        }),
      )
      .optional()
      .describe('mcp: headers resolved at run time (context://user_identity: the signed-in user as base64 JSON)'),
    authentication_parameters: z
      .object({
        api_key_secret_name: z.string().regex(SECRET_NAME, SECRET_NAME_RULE).optional(),
        scope: z.string().optional(),
      })
      .strict()
      .optional(),
  })).superRefine((d, ctx) => {
    const only = (type: string, fields: (keyof typeof d)[]) => {
      for (const f of fields)
        if (d.tool_type !== type && d[f] !== undefined)
          ctx.addIssue({ code: 'custom', path: [f], message: `valid only for a ${type} tool` });
    };
    only('knowledge', ['index_name', 'top_n', 'retrieval', 'search_mode', 'minimum_score']);
    only('plugin', ['plugin_object_id']);
    only('mcp', ['url', 'allowed_tools', 'authentication_type', 'authentication_parameters', 'headers']);
    if (d.tool_type === 'knowledge' && d.index_name === undefined)
      ctx.addIssue({ code: 'custom', path: ['index_name'], message: 'index_name is required for a knowledge tool' });
    if (d.tool_type === 'mcp' && d.url === undefined)
      ctx.addIssue({ code: 'custom', path: ['url'], message: 'url is required for an mcp tool' });
    if (d.tool_type === 'mcp' && d.allowed_tools === undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['allowed_tools'],
        message: "allowed_tools is required for an mcp tool: the server's tools the model may call",
      });
    if (d.authentication_type === 'APIKey' && !d.authentication_parameters?.api_key_secret_name) {
      ctx.addIssue({
        code: 'custom',
        path: ['authentication_parameters', 'api_key_secret_name'],
        message: 'required when authentication_type is APIKey',
      });
    }
  }),
} satisfies ResourceKind;

export const prompts = {
  provider: 'Svc.Prompt',
  segment: 'prompts',
  type: 'prompt',
  schema: definition('prompt', () => ({
    category: z.string().optional(),
    prefix: z.string(),
    suffix: z.string().optional(),
  })),
} satisfies ResourceKind;

/** What a completion model may be declared to read and do beyond text. */
export const MODEL_CAPABILITIES = ['vision', 'tools'] as const;

export const aiModels = {
  provider: 'Svc.AIModel',
  segment: 'aiModels',
  type: 'ai-model',
  schema: definition('ai-model', () => ({
    model_type: z
      .enum(['completion', 'embedding', 'realtime'])
      .describe('realtime: a speech model reached through the Realtime WebSocket API (docs/realtime-speech.md)'),
    deployment_name: z.string().min(1),
    api_endpoint_object_id: ObjectId,
    model_parameters: ModelParametersFields.optional(),
    /**
     * Prices used for `total_cost` (currency of your choice, per 1,000 tokens); 0 when absent. `pricing` wins when both
     * are set.
     */
    cost_per_1k_prompt_tokens: z.number().min(0).optional(),
    cost_per_1k_completion_tokens: z.number().min(0).optional(),
    pricing: z
      .object({
        input_per_million: z.number().min(0).max(1_000_000),
        output_per_million: z.number().min(0).max(1_000_000),
        currency: z.string().regex(/^[A-Z]{3}$/, 'currency must be an ISO 4217 code such as USD or EUR'),
      })
      .strict()
      .optional()
      .describe(
        'Prices per million input (prompt) and output (completion) tokens, in `currency`: the cost of every ' +
          'call of the model in usage records and budgets',
      ),
    capabilities: z
      .array(z.enum(MODEL_CAPABILITIES, { error: `capabilities are ${MODEL_CAPABILITIES.join(', ')}` }))
      .max(MODEL_CAPABILITIES.length)
      .refine((list) => new Set(list).size === list.length, 'capabilities must not repeat')
      .optional()
      .describe(
        'What the model can read and do beyond text: `vision` (images in the prompt), `tools` (function calling)',
      ),
  })).refine((m) => m.model_type === 'completion' || !m.capabilities?.includes('vision'), {
    path: ['capabilities'],
    message: 'only completion models read images (vision)',
  }),
} satisfies ResourceKind;

/** A runtime setting (blocklist, quotas, thresholds, branding, webhook signing secret): its key is its name. */
export const appConfigurations = {
  provider: 'Svc.Configuration',
  segment: 'appConfigurations',
  type: 'app-configuration',
  schema: definition('app-configuration', () => ({
    key: z.string().min(1),
    value: z.string(),
    content_type: z.string().optional(),
    previous_value: z
      .string()
      .optional()
      .describe('Set by the service (secret settings): the value the last change replaced, valid until previous_until'),
    previous_until: z.string().optional().describe('Set by the service'),
  })).refine((d) => d.key === d.name, { path: ['key'], message: 'key must equal the resource name' }),
  instanceFields: ['previous_value', 'previous_until'],
} satisfies ResourceKind;

export const apiEndpointConfigurations = {
  provider: 'Svc.Configuration',
  segment: 'apiEndpointConfigurations',
  type: 'api-endpoint',
  schema: definition('api-endpoint', () => ApiEndpointFields).superRefine(checkEndpoint),
} satisfies ResourceKind;

export type WorkflowDoc = ResourceOf<typeof workflows>;
export type ToolDoc = ResourceOf<typeof tools>;
export type PromptDoc = ResourceOf<typeof prompts>;
export type AiModelDoc = ResourceOf<typeof aiModels>;
export type AppConfigurationDoc = ResourceOf<typeof appConfigurations>;
export type ApiEndpointDoc = ResourceOf<typeof apiEndpointConfigurations>;
