// Seeds a complete agent through the Management API: API endpoint -> AI model -> prompt -> workflow -> agent.
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { oidForUpn } from '../../shared/auth/local-idp.js';
import { ROLE_IDS, roleDefinitionPath } from '../../shared/providers/types/roles.js';
import type { ApiClient } from './app.js';
import { INSTANCE } from './services.js';

export interface AgentOptions {
  llmUrl: string;
  history?: { enabled: boolean; max_history: number };
  prefix?: string;
  suffix?: string;
  modelParameters?: Record<string, number>;
  prices?: { prompt: number; completion: number };
  pricing?: { input_per_million: number; output_per_million: number; currency: string };
  costCenter?: string;
  timeoutSeconds?: number;
  /** The endpoint's max_connections. */
  maxConnections?: number;
  /** Another agent's API endpoint (`{agent}-endpoint`) instead of one of its own. */
  endpointOf?: string;
  as?: string;
}

const path = (provider: string, type: string, name: string) =>
  `/instances/${INSTANCE}/providers/${provider}/${type}/${name}`;

export async function seedAgent(app: ApiClient, name: string, o: AgentOptions): Promise<void> {
  const post = async (provider: string, type: string, resource: string, body: Record<string, unknown>) => {
    const r = await app.call('POST', `${app.management}${path(provider, type, resource)}`, {
      body: { name: resource, ...body },
      ...(o.as ? { as: o.as } : {}),
    });
    expect(r.status, `${type}/${resource}: ${JSON.stringify(r.body)}`).toBe(200);
  };
  const endpoint = `${o.endpointOf ?? name}-endpoint`;
  if (!o.endpointOf) {
    await post('Svc.Configuration', 'apiEndpointConfigurations', endpoint, {
      category: 'LLM',
      provider: 'openai',
      url: `${o.llmUrl}/v1`,
      authentication_type: 'None',
      timeout_seconds: o.timeoutSeconds ?? 30,
      ...(o.maxConnections ? { max_connections: o.maxConnections } : {}),
    });
  }
  await post('Svc.AIModel', 'aiModels', `${name}-model`, {
    model_type: 'completion',
    deployment_name: `${name}-deployment`,
    api_endpoint_object_id: path('Svc.Configuration', 'apiEndpointConfigurations', endpoint),
    ...(o.modelParameters ? { model_parameters: o.modelParameters } : {}),
    // Prices per 1,000 tokens, given as the model's pricing (per million, in USD).
    ...(o.prices
      ? {
          pricing: {
            input_per_million: o.prices.prompt * 1000,
            output_per_million: o.prices.completion * 1000,
            currency: 'USD',
          },
        }
      : {}),
    ...(o.pricing ? { pricing: o.pricing } : {}),
  });
  await post('Svc.Prompt', 'prompts', `${name}-prompt`, {
    prefix: o.prefix ?? 'You are a test agent.',
    ...(o.suffix ? { suffix: o.suffix } : {}),
  });
  await post('Svc.Agent', 'workflows', `${name}-workflow`, {
    workflow_type: 'chat',
    workflow_host: 'builtin',
    main_ai_model_object_id: path('Svc.AIModel', 'aiModels', `${name}-model`),
    main_prompt_object_id: path('Svc.Prompt', 'prompts', `${name}-prompt`),
  });
  await post('Svc.Agent', 'agents', name, {
    display_name: name,
    workflow_object_id: path('Svc.Agent', 'workflows', `${name}-workflow`),
    ...(o.history ? { conversation_history_settings: o.history } : {}),
    ...(o.costCenter ? { cost_center: o.costCenter } : {}),
  });
}

/** Lets a user use an agent: a Reader role assignment on it. */
export async function grantReader(app: ApiClient, upn: string, agent: string): Promise<void> {
  const name = randomUUID();
  const r = await app.call(
    'POST',
    `${app.management}/instances/${INSTANCE}/providers/Svc.Authorization/roleAssignments/${name}`,
    {
      body: {
        name,
        principal_id: oidForUpn(upn),
        principal_type: 'User',
        role_definition_id: roleDefinitionPath(ROLE_IDS.reader),
        scope: `/instances/${INSTANCE}/providers/Svc.Agent/agents/${agent}`,
      },
    },
  );
  expect(r.status).toBe(200);
}
