// The answer of a turn: the pre-completion shields, the prompt rewrite, then the agent's workflow plugin or its
// chat model, and the post-completion shields on what they answer.
import { effectiveShielding } from '../providers/types/agent-settings.js';
import { refusalMessage, screen, type Block } from '../shielding/plugins.js';
import { pricesOf } from '../models/pricing.js';
import { chargeEmbeddings, meteredEmbeddings } from './metered.js';
import { rewritePrompt } from './rewrite.js';
import { workflowAnswer } from './workflow-plugin.js';
import type { PluginChain } from './agent-chain.js';
import { callerText } from './caller-text.js';
import type { CompletionDeps } from './completion-deps.js';
import { answerWithModel, type Prepared } from './model-answer.js';
import { warned, type Answer, type Spent, type TurnRun } from './turn.js';

/**
 * The stages of a turn: pre-completion shields on the typed prompt; the prompt rewrite;
 * the semantic cache; retrieval; the model; post-completion shields on the answer. A streamed answer is
 * streamed as the model produces it only when no post-completion shield has to pass it first.
 */
export async function produceAnswer(s: CompletionDeps, turn: TurnRun, progress: { streamed: number }): Promise<Answer> {
  const { principal, admitted, chain, options } = turn;
  const { request, agent, session } = admitted;
  const shields = effectiveShielding(agent);
  const refused = async (block: Block, spent: Spent): Promise<Answer> => {
    const content = await refusalMessage(s);
    options.onDelta?.(content);
    const { cache: _notStored, ...rest } = spent;
    return { ...rest, content, citations: [], analysis: [block], block };
  };

  const preBlock =
    shields.pre.length > 0
      ? await screen(s, { plugins: shields.pre, stage: 'pre', text: await callerText(s, turn), signal: options.signal })
      : undefined;
  if (preBlock) return refused(preBlock, { promptTokens: 0, completionTokens: 0, cost: 0 });

  const rewritten = await rewritePrompt(s, {
    principal,
    agent,
    session,
    prompt: request.user_prompt,
    signal: options.signal,
  });
  const prompt = rewritten?.prompt ?? request.user_prompt;
  const spent = {
    promptTokens: rewritten?.promptTokens ?? 0,
    completionTokens: rewritten?.completionTokens ?? 0,
    cost: rewritten?.cost ?? 0,
  };
  if (chain.kind === 'plugin') return pluginAnswer(s, { ...turn, chain }, { prompt, spent, refused });
  // The embeddings' cost (retrieval, the semantic cache, searches) is the turn's too.
  const prices = pricesOf(chain.model);
  const spend = meteredEmbeddings(s.budgets, { principal, agent }, prices.currency);
  try {
    return await answerWithModel(s, { ...turn, chain }, { prompt, spent, spend, refused, progress });
  } finally {
    await chargeEmbeddings(s.budgets, { principal, agent }, spend).catch(
      warned(s, 'An embedding cost could not be charged'),
    );
  }
}

/** A turn of an external workflow: its plugin answers, and the post-completion shields screen what it answered. */
async function pluginAnswer(
  s: CompletionDeps,
  { principal, admitted, chain, options }: TurnRun<PluginChain>,
  { prompt, spent, refused }: Pick<Prepared, 'prompt' | 'spent' | 'refused'>,
): Promise<Answer> {
  const { agent, session, attachments, scope } = admitted;
  const shields = effectiveShielding(agent);
  const input = { principal, agent, prompt, session, attachments, scope };
  const w = await workflowAnswer(s, { plugin: chain.plugin, input, signal: options.signal });
  const answer: Answer = {
    content: w.content,
    citations: w.citations,
    analysis: [],
    promptTokens: spent.promptTokens + w.promptTokens,
    completionTokens: spent.completionTokens + w.completionTokens,
    cost: spent.cost + w.cost,
    deployment: w.deployment,
  };
  const postBlock =
    shields.post.length > 0
      ? await screen(s, { plugins: shields.post, stage: 'post', text: answer.content, signal: options.signal })
      : undefined;
  if (postBlock) return refused(postBlock, answer);
  options.onDelta?.(answer.content);
  return answer;
}
