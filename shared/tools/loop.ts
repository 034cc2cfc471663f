// The tool loop: the model is offered the agent's functions; the calls it asks for run side by side, their
// results (capped, errors included as results the model can read) go back to it, for at most
// TOOL_MAX_ROUNDS rounds within TOOL_TIME_BUDGET_SECONDS; then it must answer. Each execution is described
// for the turn's record (name, a digest of the arguments, duration, outcome), never with its arguments.
import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { ChatMessage, ModelAnswer, ModelParameters, ToolCall } from '../models/wire.js';
import type { AgentFunction, Toolbox } from './toolbox.js';
import type { Config } from '../config.js';
import { toError } from '../errors.js';

/** What this module uses of the service (the hosts pass the whole of it). */
export interface LoopDeps {
  readonly config: Config;
}

export interface ToolExecution {
  type: 'ToolExecution';
  tool_name: string;
  function_name: string;
  arguments_sha256: string;
  duration_ms: number;
  outcome: 'Succeeded' | 'Failed' | 'TimedOut';
}

export interface ToolEvents {
  onToolStart?: (e: { function_name: string; tool_name: string }) => void;
  onToolEnd?: (e: ToolExecution) => void;
}

const truncate = (text: string, max: number) =>
  text.length <= max
    ? text
    : `${text.slice(0, max)}\n[cut: the result was ${text.length} characters, ${max} are shown]`;

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Runs one call within the time left; whatever happens becomes a result the model reads. */
async function execute(
  s: LoopDeps,
  call: ToolCall,
  { fn, deadline, signal }: { fn: AgentFunction | undefined; deadline: number; signal: AbortSignal | undefined },
): Promise<{ content: string; execution: ToolExecution }> {
  const started = performance.now();
  const base = {
    type: 'ToolExecution' as const,
    tool_name: fn?.tool ?? '',
    function_name: call.name,
    arguments_sha256: createHash('sha256').update(call.arguments).digest('hex'),
  };
  const done = (content: string, outcome: ToolExecution['outcome']) => ({
    content: truncate(content, s.config.tools.resultMaxChars),
    execution: { ...base, duration_ms: Math.round(performance.now() - started), outcome },
  });
  if (!fn) return done(`Error: there is no function named ${call.name}`, 'Failed');
  let args: unknown;
  try {
    args = JSON.parse(call.arguments || '{}');
  } catch {
    return done('Error: the arguments are not valid JSON', 'Failed');
  }
  if (!isRecord(args)) return done('Error: the arguments must be a JSON object', 'Failed');
  const left = deadline - Date.now();
  if (left <= 0) return done('Error: the time for tool calls is used up', 'TimedOut');
  const timeout = AbortSignal.timeout(left);
  const both = signal ? AbortSignal.any([signal, timeout]) : timeout;
  try {
    const result = await Promise.race([
      fn.run(args, both),
      new Promise<never>((_, reject) =>
        both.addEventListener('abort', () => reject(toError(both.reason)), { once: true }),
      ),
    ]);
    return done(result.isError ? `Error: ${result.text}` : result.text, result.isError ? 'Failed' : 'Succeeded');
  } catch (e) {
    if (signal?.aborted) throw e;
    if (timeout.aborted) return done('Error: the tool did not answer in time', 'TimedOut');
    // The message of a tool's failure is the tool's own (its server's answer); nothing of ours is in it.
    return done(`Error: ${e instanceof Error ? e.message.split('\n')[0]?.slice(0, 500) : 'the tool failed'}`, 'Failed');
  }
}

/** One round's model call, counted against the caller's budgets by whoever gives it (completions/metered.ts). */
export type RoundCall = (conversation: readonly ChatMessage[], parameters: ModelParameters) => Promise<ModelAnswer>;

export interface ToolRounds {
  messages: readonly ChatMessage[];
  parameters: ModelParameters;
  toolbox: Toolbox;
  events: ToolEvents;
  /** The model call of each round. */
  complete: RoundCall;
  signal: AbortSignal | undefined;
}

/** The model's final answer after its tool rounds, with every round's tokens and the executions. */
export async function answerWithTools(
  s: LoopDeps,
  { messages, parameters, toolbox, events, complete, signal }: ToolRounds,
): Promise<{ answer: ModelAnswer; executions: ToolExecution[] }> {
  const byName = new Map(toolbox.functions.map((f) => [f.definition.function.name, f]));
  const tools = toolbox.functions.map((f) => f.definition);
  const conversation = [...messages];
  const executions: ToolExecution[] = [];
  const deadline = Date.now() + s.config.tools.timeBudgetMs;
  let promptTokens = 0;
  let completionTokens = 0;
  for (let round = 0; ; round++) {
    // The last round offers no tools: the model answers with what it has.
    const offer = round < s.config.tools.maxRounds && Date.now() < deadline;
    const answer = await complete(conversation, { ...parameters, ...(offer ? { tools, tool_choice: 'auto' } : {}) });
    promptTokens += answer.promptTokens;
    completionTokens += answer.completionTokens;
    if (!answer.toolCalls || !offer)
      return { answer: { content: answer.content, promptTokens, completionTokens }, executions };
    conversation.push({
      role: 'assistant',
      content: answer.content,
      tool_calls: answer.toolCalls.map((c) => ({
        id: c.id,
        type: 'function',
        function: { name: c.name, arguments: c.arguments },
      })),
    });
    const results = await Promise.all(
      answer.toolCalls.map(async (call) => {
        events.onToolStart?.({ function_name: call.name, tool_name: byName.get(call.name)?.tool ?? '' });
        const r = await execute(s, call, { fn: byName.get(call.name), deadline, signal });
        events.onToolEnd?.(r.execution);
        return { call, ...r };
      }),
    );
    for (const r of results) {
      executions.push(r.execution);
      conversation.push({ role: 'tool', tool_call_id: r.call.id, content: r.content });
    }
  }
}
