// The chain of resources an agent answers with, read from the resource cache: agent -> workflow -> (AI model ->
// API endpoint, prompt), or the workflow's plugin for an external workflow. A link missing or unusable is a 400
// naming the agent.
import { DomainError, validationError } from '../errors.js';
import type { AgentDoc } from '../providers/types/agent.js';
import type { ResourceKind, ResourceOf } from '../providers/types/resource-type.js';
import {
  aiModels,
  apiEndpointConfigurations,
  prompts,
  workflows,
  type AiModelDoc,
  type PromptDoc,
} from '../providers/types/catalog.js';
import { endpointView, MODEL_PROVIDERS, type EndpointView } from '../models/endpoint.js';
import { pricesOf } from '../models/pricing.js';
import type { RunnablePlugin } from '../plugins/runtime.js';
import type { CompletionDeps } from './completion-deps.js';

/** A workflow of the service's own: its chat model answers. */
export interface ChatChain {
  kind: 'chat';
  agent: AgentDoc;
  prompt: PromptDoc;
  model: AiModelDoc;
  endpoint: EndpointView;
}

/** An external workflow: its plugin answers. */
export interface PluginChain {
  kind: 'plugin';
  agent: AgentDoc;
  plugin: RunnablePlugin;
}

export type AgentChain = ChatChain | PluginChain;

const notConfigured = (agent: string, what: string) =>
  validationError([{ field: 'agent_name', message: `Agent ${agent} cannot answer: ${what}` }]);

/** agent -> workflow -> (AI model -> API endpoint, prompt) or its plugin, from the resource cache. */
export async function chainOf(s: CompletionDeps, agent: AgentDoc): Promise<AgentChain> {
  const get = async <K extends ResourceKind>(
    objectId: string | undefined,
    kind: K,
    what: string,
  ): Promise<ResourceOf<K>> => {
    const doc = objectId !== undefined ? await s.resourceCache.get(objectId, kind) : undefined;
    if (!doc) throw notConfigured(agent.name, `its ${what} is missing`);
    return doc;
  };
  const workflow = await get(agent.workflow_object_id, workflows, 'workflow');
  if (workflow.workflow_type === 'external') {
    const plugin = await s.plugins
      .runnable(workflow.plugin_object_id, 'agent workflow', 'plugin_object_id')
      .catch((e: unknown) => {
        throw notConfigured(
          agent.name,
          `its workflow plugin cannot run (${e instanceof DomainError ? e.message : String(e)})`,
        );
      });
    return { kind: 'plugin', agent, plugin };
  }
  const [model, prompt] = await Promise.all([
    get(workflow.main_ai_model_object_id, aiModels, 'AI model'),
    get(workflow.main_prompt_object_id, prompts, 'prompt'),
  ]);
  if (model.model_type !== 'completion') throw notConfigured(agent.name, 'its AI model is not a completion model');
  const endpoint = endpointView(await get(model.api_endpoint_object_id, apiEndpointConfigurations, 'API endpoint'));
  if (!endpoint || !MODEL_PROVIDERS.includes(endpoint.provider))
    throw notConfigured(agent.name, 'its API endpoint configuration is not valid for a model');
  return { kind: 'chat', agent, prompt, model, endpoint };
}

/**
 * The currency the agent's model is priced in (null: none named, or no model of its own); its budgets are those in it.
 */
export const agentCurrency = (s: CompletionDeps, agent: AgentDoc): Promise<string | null> =>
  chainOf(s, agent).then(
    (chain) => (chain.kind === 'chat' ? pricesOf(chain.model).currency : null),
    // A chain that cannot answer is reported by the run itself.
    () => null,
  );
