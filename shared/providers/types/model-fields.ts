// The fields of AI model and API endpoint definitions. An AI model configures the request fields of its calls
// (provider-specific request fields live on the AI model): sampling, `seed`, `response_format`, `stop`, penalties,
// reasoning effort, and `extra_body`, a pass-through map for fields the service does not model. Every field is checked
// by type when the model is saved; fields the service sets itself cannot be passed through.
import { z } from 'zod';
import { SECRET_NAME, SECRET_NAME_RULE } from '../../config.js';
import { urlProblem } from '../../net/outbound.js';

const Penalty = z.number().min(-2).max(2);

/** Chat Completions fields the service knows the type of, for pass-through entries that name one. */
const KNOWN_WIRE_FIELDS: Record<string, z.ZodType> = {
  logprobs: z.boolean(),
  top_logprobs: z.number().int().min(0).max(20),
  n: z.number().int().min(1).max(128),
  user: z.string(),
  logit_bias: z.record(z.string(), z.number().min(-100).max(100)),
  parallel_tool_calls: z.boolean(),
  max_completion_tokens: z.number().int().positive(),
  service_tier: z.string(),
  store: z.boolean(),
  metadata: z.record(z.string(), z.string()),
  modalities: z.array(z.string()),
  verbosity: z.enum(['low', 'medium', 'high']),
  prediction: z.object({ type: z.literal('content'), content: z.unknown() }).loose(),
};

/** Fields of the request the service writes: a model cannot override them. */
const RESERVED = new Set([
  'model',
  'messages',
  'stream',
  'stream_options',
  'tools',
  'tool_choice',
  'functions',
  'function_call',
]);

export const ModelParametersFields = z
  .object({
    temperature: z.number().min(0).max(1).optional(),
    max_new_tokens: z.number().int().positive().optional(),
    top_p: z.number().min(0).max(1).optional(),
    seed: z.number().int().optional(),
    response_format: z
      .discriminatedUnion('type', [
        z.object({ type: z.literal('text') }).strict(),
        z.object({ type: z.literal('json_object') }).strict(),
        z
          .object({
            type: z.literal('json_schema'),
            json_schema: z
              .object({
                name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/),
                schema: z.record(z.string(), z.unknown()).optional(),
                strict: z.boolean().optional(),
                description: z.string().optional(),
              })
              .strict(),
          })
          .strict(),
      ])
      .optional(),
    stop: z.union([z.string().min(1), z.array(z.string().min(1)).min(1).max(4)]).optional(),
    presence_penalty: Penalty.optional(),
    frequency_penalty: Penalty.optional(),
    reasoning_effort: z.enum(['minimal', 'low', 'medium', 'high']).optional(),
    extra_body: z
      .record(
        z.string().regex(/^[a-z_][a-z0-9_]{0,63}$/, 'field names are lower-case letters, digits and underscores'),
        z.unknown(),
      )
      .superRefine((extra, ctx) => {
        for (const [field, value] of Object.entries(extra)) {
          if (RESERVED.has(field) || field in WIRE_NAMES) {
            ctx.addIssue({
              code: 'custom',
              path: [field],
              message:
                `${field} is set by the service${field in WIRE_NAMES ? ' or by its own model parameter' : ''}; ` +
                `it cannot be passed through`,
            });
            continue;
          }
          const type = KNOWN_WIRE_FIELDS[field];
          const checked = type?.safeParse(value);
          if (checked && !checked.success)
            ctx.addIssue({
              code: 'custom',
              path: [field],
              message: `${field}: ${checked.error.issues[0]?.message ?? 'wrong type'}`,
            });
        }
      })
      .optional()
      .describe('Request fields passed to the model as they are (fields the service knows are checked by type)'),
  })
  .strict();
export type ModelParametersFields = z.output<typeof ModelParametersFields>;

/** Model parameter names as the wire spells them. */
export const WIRE_NAMES: Record<string, string> = {
  temperature: 'temperature',
  max_new_tokens: 'max_tokens',
  top_p: 'top_p',
  seed: 'seed',
  response_format: 'response_format',
  stop: 'stop',
  presence_penalty: 'presence_penalty',
  frequency_penalty: 'frequency_penalty',
  reasoning_effort: 'reasoning_effort',
  max_tokens: 'max_tokens',
};

export const PROVIDERS = ['openai', 'azure-openai', 'azure-content-safety'] as const;
/** Providers that serve chat completions and embeddings; `azure-content-safety` serves shielding. */
export const MODEL_PROVIDERS: readonly string[] = ['openai', 'azure-openai'];

/** A model endpoint URL: http(s), no credentials, never link-local or a platform address. */
export const ModelEndpointUrl = z.string().superRefine((v, ctx) => {
  const problem = urlProblem(v, { policy: 'model', allowPrivateNetwork: false });
  if (problem) ctx.addIssue({ code: 'custom', message: `url ${problem}` });
});

/** The fields of an `api-endpoint` resource, beyond the common ones. */
export const ApiEndpointFields = {
  category: z.enum(['LLM', 'General']).default('LLM'),
  provider: z.enum(PROVIDERS, { error: `provider must be one of ${PROVIDERS.join(', ')}` }),
  url: ModelEndpointUrl,
  api_version: z
    .string()
    .regex(/^[0-9A-Za-z.-]{1,40}$/, 'api_version must be a version string')
    .optional(),
  authentication_type: z.enum(['None', 'APIKey', 'AzureIdentity']),
  authentication_parameters: z
    .object({
      api_key_secret_name: z.string().regex(SECRET_NAME, SECRET_NAME_RULE).optional(),
      /** Managed-identity token scope; only the scopes of `allowedScopes` are accepted. */
      scope: z.string().optional(),
    })
    .strict()
    .default({}),
  timeout_seconds: z.number().int().positive().max(600).default(60),
  max_connections: z
    .number()
    .int()
    .min(1)
    .max(100_000)
    .optional()
    .describe(
      'Calls the service holds open to this endpoint at once, per instance (a streamed answer holds one while ' +
        'it streams); default 1024. Beyond it calls wait for one within their timeout, the agent holding fewest ' +
        'served first, then answer 503 ConnectionLimit',
    ),
  private_network: z
    .boolean()
    .optional()
    .describe(
      'Set by the service (ignored in requests): whether the endpoint was saved by a principal who may point ' +
        'the service at loopback and private addresses; its calls may reach them only then',
    ),
};

/** Cross-field rules of an endpoint definition. */
export function checkEndpoint(
  d: {
    provider: string;
    api_version?: string | undefined;
    authentication_type: string;
    authentication_parameters: { api_key_secret_name?: string | undefined };
  },
  ctx: z.RefinementCtx,
): void {
  if (d.authentication_type === 'APIKey' && !d.authentication_parameters.api_key_secret_name) {
    ctx.addIssue({
      code: 'custom',
      path: ['authentication_parameters', 'api_key_secret_name'],
      message: 'required when authentication_type is APIKey',
    });
  }
  if (d.provider === 'azure-openai' && !d.api_version) {
    ctx.addIssue({ code: 'custom', path: ['api_version'], message: 'required when provider is azure-openai' });
  }
}
