// What the stages of a turn pass along: the run's options, the turn as every stage is given it (who asks, the
// admitted request, the agent's chain), and the answer with what it cost and what it found.
import type { Principal } from '../auth/principal.js';
import type { CacheSlot } from '../knowledge/cache.js';
import type { Citation } from '../knowledge/retrieval.js';
import type { ChatMessage } from '../models/wire.js';
import type { Block } from '../shielding/plugins.js';
import type { ToolEvents, ToolExecution } from '../tools/loop.js';
import type { FileArtifact } from '../tools/sandboxed.js';
import type { Admitted } from './admit-request.js';
import type { AgentChain } from './agent-chain.js';
import type { CompletionDeps } from './completion-deps.js';

export interface RunOptions {
  operationId: string;
  /** The operation may have run before (a redelivery, or a caller's retry with its own operation_id). */
  mayRepeat: boolean;
  /** Aborts the model call (a cancelled operation, a client gone, shutdown). */
  signal?: AbortSignal;
  /** Streams the answer: each piece of text as the model produces it. */
  onDelta?: (text: string) => void;
  /**
   * Tool calls starting and ending (streamed as comments, so the event names stay those of docs/api-decisions.md,
   * Streaming).
   */
  onToolStart?: ToolEvents['onToolStart'];
  onToolEnd?: ToolEvents['onToolEnd'];
  /** Runs between the answer and its recording; throwing CallCancelledError records nothing of the turn. */
  beforeRecord?: () => Promise<void>;
}

/** One turn as its stages see it: who asks, the admitted request, the agent's chain, and the run's options. */
export interface TurnRun<C extends AgentChain = AgentChain> {
  principal: Principal;
  admitted: Admitted;
  chain: C;
  options: RunOptions;
}

/** What a turn answers, with what it cost and what it found. */
export interface Answer {
  content: string;
  promptTokens: number;
  completionTokens: number;
  cost: number;
  citations: Citation[];
  analysis: unknown[];
  /** Where to store the answer for similar prompts (a cache miss of a request that may be cached). */
  cache?: CacheSlot;
  /** The shield that blocked the turn. */
  block?: Block;
  /** The tool calls the turn ran, as recorded on the assistant message. */
  executions?: ToolExecution[];
  /** Files the code interpreter wrote, as recorded on the assistant message. */
  artifacts?: FileArtifact[];
  /** The model deployment the answer came from, when not the workflow's (an external workflow's last model). */
  deployment?: string;
  /** The messages the main model was sent, as kept (images named by their attachment's object id). */
  prompt?: ChatMessage[];
}

/** What an answer spent before its content is known (a refusal keeps these and nothing else). */
export type Spent = Omit<Answer, 'content' | 'analysis' | 'citations'>;

/** Logs a failure the turn goes on without (a cache that could not be read or written, a cost not charged). */
export const warned = (s: Pick<CompletionDeps, 'log'>, what: string) => (e: unknown) =>
  s.log.warn(what, { error: e instanceof Error ? e.message : String(e) });
