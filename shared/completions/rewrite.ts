// Prompt rewrite: with `text_rewrite_settings` enabled, the rewrite model reads the rewrite
// prompt's prefix as its system message and the session's last `user_prompts_window_size` user prompts plus
// the new one; its answer replaces the user prompt for retrieval, the cache and the main call. The recorded
// user message keeps what the user typed; the rewrite's tokens and cost count in the turn's usage.
import { validationError } from '../errors.js';
import { endpointView, MODEL_PROVIDERS } from '../models/endpoint.js';
import { UpstreamError } from '../models/upstream-errors.js';
import type { ChatMessage } from '../models/wire.js';
import type { AgentDoc } from '../providers/types/agent.js';
import { aiModels, apiEndpointConfigurations, prompts } from '../providers/types/catalog.js';
import type { SessionDoc } from '../conversations/conversations.js';
import type { Stored } from '../store/types.js';
import type { Principal } from '../auth/principal.js';
import { metered } from './metered.js';
import type { Budgets } from './budgets.js';
import type { Conversations } from '../conversations/conversations.js';
import type { ModelGateway } from '../models/gateway.js';
import type { ResourceCache } from '../providers/resource-cache.js';

/** What this module uses of the service (the hosts pass the whole of it). */
export interface RewriteDeps {
  readonly budgets: Budgets;
  readonly conversations: Conversations;
  readonly models: ModelGateway;
  readonly resourceCache: ResourceCache;
}

export interface Rewritten {
  prompt: string;
  promptTokens: number;
  completionTokens: number;
  cost: number;
}

const notReady = (agent: string, what: string) =>
  validationError([{ field: 'agent_name', message: `Agent ${agent} cannot rewrite prompts: ${what}` }]);

export interface RewriteInput {
  /** Whose budgets the rewrite model's call counts against. */
  principal: Principal;
  agent: AgentDoc;
  session: Stored<SessionDoc> | undefined;
  prompt: string;
  signal?: AbortSignal | undefined;
}

/** The rewritten prompt, or undefined when the agent does not rewrite. */
export async function rewritePrompt(
  s: RewriteDeps,
  { principal, agent, session, prompt, signal }: RewriteInput,
): Promise<Rewritten | undefined> {
  const settings = agent.text_rewrite_settings?.user_prompt_rewrite_enabled
    ? agent.text_rewrite_settings.user_prompt_rewrite_settings
    : undefined;
  if (!settings) return undefined;
  const [model, rewritePrompt] = await Promise.all([
    s.resourceCache.get(settings.user_prompt_rewrite_ai_model_object_id, aiModels),
    s.resourceCache.get(settings.user_prompt_rewrite_prompt_object_id, prompts),
  ]);
  if (!model || model.model_type !== 'completion')
    throw notReady(agent.name, 'its rewrite model is missing or not a completion model');
  if (!rewritePrompt) throw notReady(agent.name, 'its rewrite prompt is missing');
  const endpointDoc = await s.resourceCache.get(model.api_endpoint_object_id, apiEndpointConfigurations);
  const endpoint = endpointDoc && endpointView(endpointDoc);
  if (!endpoint || !MODEL_PROVIDERS.includes(endpoint.provider))
    throw notReady(agent.name, "its rewrite model's API endpoint is missing or not a model endpoint");

  const window = settings.user_prompts_window_size;
  // Turns alternate, so the last 2n messages hold the last n user prompts.
  const earlier =
    session && window > 0
      ? (await s.conversations.recentHistory(session, window * 2)).filter((m) => m.sender === 'User').slice(-window)
      : [];
  const messages: ChatMessage[] = [
    ...(rewritePrompt.prefix.length > 0 ? [{ role: 'system' as const, content: rewritePrompt.prefix }] : []),
    ...earlier.map((m) => ({ role: 'user' as const, content: m.text })),
    { role: 'user', content: prompt },
  ];
  try {
    const { answer, cost } = await metered(
      s.budgets,
      { payer: { principal, agent }, model, request: { messages, parameters: {} } },
      () =>
        s.models.complete(
          { endpoint, deployment: model.deployment_name, messages, parameters: {} },
          { signal, caller: agent.name },
        ),
    );
    const rewritten = answer.content.trim();
    return {
      // An empty rewrite would lose the question: the typed prompt stands.
      prompt: rewritten.length > 0 ? rewritten : prompt,
      promptTokens: answer.promptTokens,
      completionTokens: answer.completionTokens,
      cost,
    };
  } catch (e) {
    if (e instanceof UpstreamError)
      throw new UpstreamError(e.kind, e.code, `The prompt rewrite model failed: ${e.message}`, {
        retryable: e.retryable,
        retryAfterMs: e.retryAfterMs,
        permanent: e.permanent,
      });
    throw e;
  }
}
