// A turn answered by the agent's chat model: the semantic cache, retrieval, the model (with its tool rounds) and
// the post-completion shields.
import { cacheSlot } from '../knowledge/cache.js';
import type { EmbeddingSpend } from '../knowledge/embedder.js';
import { PromptEmbeddings, retrieve } from '../knowledge/retrieval.js';
import { readerGroups } from '../knowledge/vector-index.js';
import { wireParameters } from '../models/parameters.js';
import { money } from '../models/pricing.js';
import type { ModelParameters } from '../models/wire.js';
import type { AiModelDoc } from '../providers/types/catalog.js';
import { effectiveShielding } from '../providers/types/agent-settings.js';
import { screen, type Block } from '../shielding/plugins.js';
import type { Admitted } from './admit-request.js';
import type { ChatChain } from './agent-chain.js';
import { buildMessages } from './chat-messages.js';
import type { CompletionDeps } from './completion-deps.js';
import { generate } from './model-call.js';
import { warned, type Answer, type Spent, type TurnRun } from './turn.js';

/**
 * What a turn has when it calls its chat model: the prompt (rewritten), what the rewrite spent, the embeddings' spend,
 * how to refuse, and the count of pieces streamed.
 */
export interface Prepared {
  prompt: string;
  spent: Pick<Answer, 'promptTokens' | 'completionTokens' | 'cost'>;
  spend: EmbeddingSpend;
  refused: (block: Block, spent: Spent) => Promise<Answer>;
  progress: { streamed: number };
}

/**
 * The semantic cache, retrieval, the model (with its tool rounds) and the post-completion shields of a turn of a chat
 * model.
 */
export async function answerWithModel(
  s: CompletionDeps,
  turn: TurnRun<ChatChain>,
  { prompt, spent, spend, refused, progress }: Prepared,
): Promise<Answer> {
  const { admitted, chain, options } = turn;
  const { request, agent } = admitted;
  const shields = effectiveShielding(agent);
  const embeddings = new PromptEmbeddings(prompt, options.signal, spend);
  const parameters = modelParameters(chain.model, admitted);
  const topN = request.settings?.agent_parameters?.index_top_n;
  const screened = shields.post.length > 0;
  // The caller's groups are part of the key: an answer drawn from documents for some groups is found only by callers
  // who read as the same groups.
  const cache = await cacheSlot(s, agent, {
    personal: await personal(s, admitted),
    embeddings,
    key: {
      filter: admitted.scope.filter,
      readers: readerGroups(admitted.scope.readers).sort(),
      topN,
      parameters,
      deployment: chain.model.deployment_name,
    },
  });
  const hit = await cache?.lookup().catch(warned(s, 'The semantic cache could not be read'));

  let answer: Answer;
  let streamed = false;
  if (hit) {
    answer = {
      content: hit.completion,
      ...spent,
      citations: hit.citations,
      analysis: [{ type: 'semantic_cache_hit', similarity: hit.similarity }],
    };
  } else {
    const citations = await retrieve(s, agent, { embeddings, scope: admitted.scope, topN });
    const { messages, kept } = await buildMessages(s, turn, { prompt, citations });
    const generated = await generate(s, turn, { messages, parameters, spend, screened, progress });
    const { reply } = generated;
    streamed = generated.streamed;
    answer = {
      content: reply.content,
      promptTokens: spent.promptTokens + reply.promptTokens,
      completionTokens: spent.completionTokens + reply.completionTokens,
      cost: spent.cost + generated.cost,
      citations: [...citations, ...generated.citations],
      analysis: [],
      executions: generated.executions,
      artifacts: generated.artifacts,
      prompt: kept,
      // An answer made with tools depends on what they said then: it is not cached.
      ...(cache && !generated.usedTools ? { cache } : {}),
    };
  }
  answer.cost = money(answer.cost + spend.cost);
  const postBlock = screened
    ? await screen(s, { plugins: shields.post, stage: 'post', text: answer.content, signal: options.signal })
    : undefined;
  if (postBlock) return refused(postBlock, answer);
  // Not streamed as it came: a cached answer, one made with tools, or one that had to pass the shields first.
  if (!streamed) options.onDelta?.(answer.content);
  return answer;
}

/**
 * The model's request fields: the request's `settings.model_parameters` over the model's own, and a facade's fields
 * over both.
 */
function modelParameters(model: AiModelDoc, { request, facade }: Admitted): ModelParameters {
  const wire = wireParameters(model.model_parameters, request.settings?.model_parameters);
  return facade?.parameters ? { ...wire, ...facade.parameters } : wire;
}

/**
 * Whether the answer may depend on something of the caller's own: history (a session's or the client's) or attachments.
 */
async function personal(s: CompletionDeps, admitted: Admitted): Promise<boolean> {
  if (admitted.attachments.length > 0 || (admitted.facade?.history?.length ?? 0) > 0) return true;
  return admitted.session ? (await s.conversations.recentHistory(admitted.session, 1)).length > 0 : false;
}
