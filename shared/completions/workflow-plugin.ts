// An external workflow: the agent's workflow plugin answers each completion in the sandbox. It gets the prompt, the
// session's history, the attachments' text and the agent's workflow_parameters, and an `svc` object whose model calls
// go through the service's model gateway (their tokens and cost are the turn's) and whose searches read the agent's
// knowledge indexes with the caller's filter and groups. A failed call is 502 PluginFailed.
import { DomainError } from '../errors.js';
import { attachmentTexts } from '../files/attachment-content.js';
import {
  agentTools,
  citationOf,
  knowledgeTool,
  PromptEmbeddings,
  searchIndex,
  type Citation,
  type KnowledgeScope,
} from '../knowledge/retrieval.js';
import { completionModel } from '../models/model-endpoint.js';
import type { ChatMessage } from '../models/wire.js';
import type { RunnablePlugin } from '../plugins/runtime.js';
import type { AgentDoc } from '../providers/types/agent.js';
import { isRecord, PluginFailed } from '../sandbox/sandbox.js';
import type { SessionDoc } from '../conversations/conversations.js';
import type { FileDoc } from '../files/files.js';
import type { Stored } from '../store/types.js';
import type { Principal } from '../auth/principal.js';
import { chargeEmbeddings, metered, meteredEmbeddings } from './metered.js';
import { money } from '../models/pricing.js';
import type { Budgets } from './budgets.js';
import type { Config } from '../config.js';
import type { Conversations } from '../conversations/conversations.js';
import type { Files } from '../files/files.js';
import type { ExtractionPool } from '../knowledge/extract-pool.js';
import type { VectorIndex } from '../knowledge/vector-index.js';
import type { Log } from '../log.js';
import type { ModelGateway } from '../models/gateway.js';
import type { PluginRuntime } from '../plugins/runtime.js';
import type { ResourceCache } from '../providers/resource-cache.js';

/** What this module uses of the service (the hosts pass the whole of it). */
export interface WorkflowPluginDeps {
  readonly budgets: Budgets;
  readonly config: Config;
  readonly conversations: Conversations;
  readonly extraction: ExtractionPool;
  readonly files: Files;
  readonly log: Log;
  readonly models: ModelGateway;
  readonly plugins: PluginRuntime;
  readonly resourceCache: ResourceCache;
  readonly vectors: VectorIndex;
}

/** Messages of the session's history a workflow plugin is given when the agent sets no history length. */
const DEFAULT_HISTORY = 20;
/**
 * Model answers a workflow plugin may ask for in one turn (`svc.complete` calls), each counted against the caller's
 * budgets.
 */
export const MAX_MODEL_CALLS = 16;
const ROLES = new Set(['system', 'user', 'assistant']);
const isRole = (role: unknown): role is 'system' | 'user' | 'assistant' => typeof role === 'string' && ROLES.has(role);

export interface WorkflowInput {
  /** The caller: the plugin's model calls count against their budgets. */
  principal: Principal;
  agent: AgentDoc;
  prompt: string;
  session: Stored<SessionDoc> | undefined;
  attachments: readonly FileDoc[];
  scope: KnowledgeScope;
}

export interface WorkflowAnswer {
  content: string;
  citations: Citation[];
  promptTokens: number;
  completionTokens: number;
  cost: number;
  /** The deployment of the last model the plugin called ('' when it called none). */
  deployment: string;
}

/** The messages of earlier turns a workflow plugin is given: the agent's history window, or the last 20. */
export function workflowHistory(agent: Pick<AgentDoc, 'conversation_history_settings'>): number {
  const settings = agent.conversation_history_settings;
  return settings?.enabled ? settings.max_history * 2 : DEFAULT_HISTORY;
}

/** The plugin's answer to a turn: it runs in the sandbox with the turn's input and the `svc` object. */
export async function workflowAnswer(
  s: WorkflowPluginDeps,
  { plugin, input, signal }: { plugin: RunnablePlugin; input: WorkflowInput; signal: AbortSignal | undefined },
): Promise<WorkflowAnswer> {
  const { agent, session } = input;
  const earlier = session ? await s.conversations.recentHistory(session, workflowHistory(agent)) : [];
  const argument = {
    user_prompt: input.prompt,
    history: earlier.map((m) => ({ role: m.sender === 'User' ? 'user' : 'assistant', content: m.text })),
    attachments: await attachmentTexts(s, input.attachments, signal),
    parameters: agent.workflow_parameters ?? {},
  };
  const spent = { promptTokens: 0, completionTokens: 0, cost: 0, deployment: '' };
  const found: Citation[] = [];
  // What the plugin may use is what the agent names: the models of its parameters, its knowledge tools' indexes.
  const models = new Set(
    Object.values(agent.workflow_parameters ?? {})
      .filter((v): v is string => typeof v === 'string')
      .map((v) => v.toLowerCase()),
  );
  const indexes = new Set((await agentTools(s, agent)).map(knowledgeTool).flatMap((t) => (t ? [t.index] : [])));
  let calls = 0;
  // Searches embed their queries for the caller too: admitted by the caller's budgets, and charged.
  const spend = meteredEmbeddings(s.budgets, { principal: input.principal, agent }, null);
  const svc = async (method: string, args: Record<string, unknown>): Promise<unknown> => {
    if (method === 'complete') {
      if (++calls > MAX_MODEL_CALLS)
        throw new Error(`a workflow plugin may ask for at most ${MAX_MODEL_CALLS} model answers in a turn`);
      const modelId = String(args.ai_model_object_id);
      if (!models.has(modelId.toLowerCase()))
        throw new Error(`${modelId} is not a model the agent's workflow_parameters name`);
      const resolved = await completionModel(s, modelId);
      if (typeof resolved === 'string') throw new Error(resolved);
      const { model, endpoint } = resolved;
      const messages = chatMessages(args.messages);
      const { answer, cost } = await metered(
        s.budgets,
        { payer: { principal: input.principal, agent }, model, request: { messages, parameters: {} } },
        () =>
          s.models.complete(
            { endpoint, deployment: model.deployment_name, messages, parameters: {} },
            { signal, caller: agent.name },
          ),
      );
      spent.promptTokens += answer.promptTokens;
      spent.completionTokens += answer.completionTokens;
      spent.cost += cost;
      spent.deployment = model.deployment_name;
      return answer.content;
    }
    if (method === 'search') {
      const topN =
        typeof args.top_n === 'number' && Number.isInteger(args.top_n) ? Math.min(50, Math.max(1, args.top_n)) : 5;
      if (typeof args.query !== 'string' || args.query.trim() === '')
        throw new Error('query must be a non-empty string');
      const index = String(args.index_name);
      if (!indexes.has(index)) throw new Error(`${index} is not an index of the agent's knowledge tools`);
      const hits = await searchIndex(s, agent, {
        index,
        embeddings: new PromptEmbeddings(args.query, signal, spend),
        scope: input.scope,
        top: topN,
      });
      const citations = hits.map(citationOf);
      found.push(...citations);
      return citations;
    }
    throw new Error(`svc has no method ${method}`);
  };
  let value: unknown;
  try {
    ({ value } = await s.plugins.call(plugin, argument, { svc, ...(signal ? { signal } : {}) }));
  } catch (e) {
    if (e instanceof PluginFailed)
      throw new DomainError(
        'upstream-failed',
        'PluginFailed',
        `The workflow plugin ${plugin.name} failed: ${e.reason}`,
      );
    throw e;
  } finally {
    await chargeEmbeddings(s.budgets, { principal: input.principal, agent }, spend);
  }
  const { content, citations } = answerOf(plugin, value);
  return { content, citations: citations ?? found, ...spent, cost: money(spent.cost + spend.cost) };
}

/** The plugin's return: the answer text, or `{completion, citations?}`. */
function answerOf(plugin: RunnablePlugin, value: unknown): { content: string; citations?: Citation[] } {
  const unusable = (why: string) =>
    new DomainError('upstream-failed', 'PluginFailed', `The workflow plugin ${plugin.name} returned ${why}`);
  if (typeof value === 'string') return { content: value };
  const completion = isRecord(value) ? value.completion : undefined;
  if (!isRecord(value) || typeof completion !== 'string')
    throw unusable('neither a string nor a dict with a completion string');
  const citations: unknown = value.citations;
  if (citations === undefined || citations === null) return { content: completion };
  // Citations as svc.search gave them, or the parts of them the plugin kept; anything else is not a citation.
  if (!Array.isArray(citations) || !citations.every(isRecord))
    throw unusable('citations that are not a list of objects');
  return {
    content: completion,
    citations: citations.map((c, i) => ({
      id: typeof c.id === 'string' ? c.id : String(i + 1),
      source: typeof c.source === 'string' ? c.source : '',
      title: typeof c.title === 'string' ? c.title : '',
      text: typeof c.text === 'string' ? c.text : '',
      score: typeof c.score === 'number' && Number.isFinite(c.score) ? c.score : 0,
    })),
  };
}

/** The messages a plugin passes to `svc.complete`: `[{role, content}]` with text content. */
function chatMessages(messages: unknown): ChatMessage[] {
  if (!Array.isArray(messages) || messages.length === 0)
    throw new Error('messages must be a non-empty list of {role, content}');
  return messages.map((m: unknown, i): ChatMessage => {
    const role = isRecord(m) ? m.role : undefined;
    const content = isRecord(m) ? m.content : undefined;
    if (!isRole(role) || typeof content !== 'string')
      throw new Error(`messages[${i}] must be {role: system|user|assistant, content: str}`);
    return { role, content };
  });
}
