// The chat model's answer to a turn's messages: one call (streamed to the caller as it comes when nothing has to
// pass it first), or the rounds of the agent's tools. Every call is metered against the caller's budgets.
import type { EmbeddingSpend } from '../knowledge/embedder.js';
import type { Citation } from '../knowledge/retrieval.js';
import { agentTools } from '../knowledge/retrieval.js';
import type { ChatMessage, ModelAnswer, ModelParameters } from '../models/wire.js';
import { answerWithTools, type ToolExecution } from '../tools/loop.js';
import type { FileArtifact } from '../tools/sandboxed.js';
import { toolboxFor } from '../tools/toolbox.js';
import { metered, type MeteredRequest } from './metered.js';
import type { ChatChain } from './agent-chain.js';
import type { CompletionDeps } from './completion-deps.js';
import type { TurnRun } from './turn.js';

/** What the model is asked: the messages and request fields, and whether the answer may stream as it comes. */
export interface Generation {
  messages: ChatMessage[];
  parameters: ModelParameters;
  /** What the turn's embeddings (the tools' searches) spend. */
  spend: EmbeddingSpend;
  /** A post-completion shield must pass the answer before the caller sees it. */
  screened: boolean;
  /** Counts the pieces streamed to the caller (a cancelled stream's tokens are estimated by them). */
  progress: { streamed: number };
}

/** The model's reply, what its calls cost, and what its tools ran, found and wrote. */
export interface Generated {
  reply: ModelAnswer;
  cost: number;
  executions: ToolExecution[];
  citations: Citation[];
  artifacts: FileArtifact[];
  /** The agent has tools: the answer depends on what they said then. */
  usedTools: boolean;
  /** The caller has seen the answer already, as it came. */
  streamed: boolean;
}

/** Asks the chain's model for the answer, with the agent's tools when it has any. */
export async function generate(
  s: CompletionDeps,
  { principal, admitted, chain, options }: TurnRun<ChatChain>,
  { messages, parameters, spend, screened, progress }: Generation,
): Promise<Generated> {
  const { agent } = admitted;
  const deployment = chain.model.deployment_name;
  let cost = 0;
  // The agent is the caller whose fair share of the endpoint's connections its calls take.
  const call = { signal: options.signal, caller: agent.name };
  // Every model call of the turn (each tool round too) is held in its budgets until it ends: refused when one would
  // be exceeded.
  const counted = async (request: MeteredRequest, run: () => Promise<ModelAnswer>) => {
    const done = await metered(s.budgets, { payer: { principal, agent }, model: chain.model, request }, run);
    Object.assign(admitted.headers, done.headers);
    cost += done.cost;
    return done.answer;
  };
  const context = {
    user: principal,
    sessionId: admitted.sessionId,
    attachments: admitted.attachments,
    scope: admitted.scope,
    spend,
  };
  const toolbox = await toolboxFor(s, context, { agent, tools: await agentTools(s, agent) });
  try {
    const usedTools = toolbox.functions.length > 0;
    // With tools the rounds are whole calls: the final answer is sent as one delta once it is known.
    const onDelta = !screened && !usedTools ? options.onDelta : undefined;
    const streamed = onDelta !== undefined;
    const done = (reply: ModelAnswer, executions: ToolExecution[] = []): Generated => ({
      reply,
      cost,
      executions,
      citations: toolbox.citations,
      artifacts: toolbox.artifacts,
      usedTools,
      streamed,
    });
    if (usedTools) {
      const complete = (conversation: readonly ChatMessage[], round: ModelParameters) =>
        counted({ messages: conversation, parameters: round }, () =>
          s.models.complete({ endpoint: chain.endpoint, deployment, messages: conversation, parameters: round }, call),
        );
      const { answer, executions } = await answerWithTools(s, {
        messages,
        parameters,
        toolbox,
        events: options,
        complete,
        signal: options.signal,
      });
      return done(answer, executions);
    }
    if (onDelta) {
      // What reached the caller is paid for even when the stream is cut before the model's usage arrives.
      let text = '';
      const delta = (piece: string) => {
        progress.streamed++;
        text += piece;
        onDelta(piece);
      };
      const reply = await counted({ messages, parameters, streamed: () => text }, () =>
        s.models.stream({ endpoint: chain.endpoint, deployment, messages, parameters }, delta, call),
      );
      return done(reply);
    }
    const reply = await counted({ messages, parameters }, () =>
      s.models.complete({ endpoint: chain.endpoint, deployment, messages, parameters }, call),
    );
    return done(reply);
  } finally {
    await toolbox.close();
  }
}
