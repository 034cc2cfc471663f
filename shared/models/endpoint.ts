// API endpoint configurations and AI models (CONTRACT 6): the fields a definition may carry, checked once
// when saved, and the typed views the model gateway works with.
import { z } from 'zod';
import { SECRET_NAME, SECRET_NAME_RULE } from '../config.js';
import { urlProblem } from '../net/outbound.js';
import type { ResourceDoc } from '../providers/resource-type.js';

export const PROVIDERS = ['openai', 'azure-openai', 'azure-content-safety'] as const;
/** Providers that serve chat completions and embeddings; `azure-content-safety` serves shielding. */
export const MODEL_PROVIDERS: readonly string[] = ['openai', 'azure-openai'];

/** A model endpoint URL (CONTRACT 10.1): http(s), no credentials, never link-local or a platform address. */
export const ModelEndpointUrl = z.string().superRefine((v, ctx) => {
  const problem = urlProblem(v, { policy: 'model', allowPrivateNetwork: false });
  if (problem) ctx.addIssue({ code: 'custom', message: `url ${problem}` });
});

/** The fields of an `api-endpoint` resource, beyond the common ones. */
export const ApiEndpointFields = {
  category: z.enum(['LLM', 'General']).default('LLM'),
  provider: z.enum(PROVIDERS, { error: `provider must be one of ${PROVIDERS.join(', ')}` }),
  url: ModelEndpointUrl,
  api_version: z.string().regex(/^[0-9A-Za-z.-]{1,40}$/, 'api_version must be a version string').optional(),
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
  private_network: z.boolean().optional().describe('Set by the service (ignored in requests): whether the endpoint was saved by a principal who may point the service at loopback and private addresses; its calls may reach them only then'),
};

/** Cross-field rules of an endpoint definition. */
export function checkEndpoint(d: { provider: string; api_version?: string | undefined; authentication_type: string; authentication_parameters: { api_key_secret_name?: string | undefined } }, ctx: z.RefinementCtx): void {
  if (d.authentication_type === 'APIKey' && !d.authentication_parameters.api_key_secret_name) {
    ctx.addIssue({ code: 'custom', path: ['authentication_parameters', 'api_key_secret_name'], message: 'required when authentication_type is APIKey' });
  }
  if (d.provider === 'azure-openai' && !d.api_version) {
    ctx.addIssue({ code: 'custom', path: ['api_version'], message: 'required when provider is azure-openai' });
  }
}

/** An endpoint as the gateway uses it. `version` changes whenever the resource is saved. */
export interface EndpointView {
  objectId: string;
  version: string;
  provider: (typeof PROVIDERS)[number];
  url: string;
  apiVersion: string | undefined;
  authenticationType: 'None' | 'APIKey' | 'AzureIdentity';
  secretName: string | undefined;
  scope: string | undefined;
  timeoutMs: number;
  /** Saved by a principal who may point the service inside its network: loopback and private addresses allowed. */
  privateNetwork: boolean;
}

const Stored = z.object({ ...ApiEndpointFields, object_id: z.string(), updated_on: z.string() }).loose();

// Parsed once per stored version: the resource cache hands out the same document object until it changes.
const views = new WeakMap<ResourceDoc, EndpointView | null>();

/** The typed view of a stored endpoint, parsed once per stored document; undefined when it is not valid. */
export function endpointView(doc: ResourceDoc): EndpointView | undefined {
  let view = views.get(doc);
  if (view === undefined) views.set(doc, (view = parseEndpoint(doc) ?? null));
  return view ?? undefined;
}

function parseEndpoint(doc: ResourceDoc): EndpointView | undefined {
  const parsed = Stored.safeParse(doc);
  if (!parsed.success) return undefined;
  const e = parsed.data;
  return {
    objectId: e.object_id,
    version: e.updated_on,
    provider: e.provider,
    url: e.url.replace(/\/+$/, ''),
    apiVersion: e.api_version,
    authenticationType: e.authentication_type,
    secretName: e.authentication_parameters.api_key_secret_name,
    scope: e.authentication_parameters.scope,
    timeoutMs: e.timeout_seconds * 1000,
    privateNetwork: e.private_network === true,
  };
}
