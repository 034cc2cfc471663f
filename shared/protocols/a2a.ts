// Agent2Agent (A2A, protocol 0.3, JSON-RPC binding) over the completion pipeline. Each agent has a card;
// `message/send` and `message/stream` are completions, their task is an operation of the status container
// (task id = operation id) and their context the caller's session (context id = session id), so
// `tasks/get` and `tasks/cancel` read and end the same operation on any instance. A non-blocking send runs
// on the queue, as an async completion does.
//
// The A2A SDK's server keeps each task's event bus in the process that runs it, which a serverless host
// that freezes between requests cannot hold; the methods are mapped here onto operations instead, in the
// 0.3 wire shapes the SDK's clients speak (tested with its client).
import { z } from 'zod';
import type { Principal } from '../auth/principal.js';
import { DomainError } from '../errors.js';
import type { AgentDoc } from '../providers/types/agent.js';
import { VERSION } from '../version.js';
import { GUID } from '../schemas.js';
import type { CompletionRequest, CompletionResponse } from '../completions/completion-request.js';
import { endOperation, readOperation, type OperationDoc } from '../completions/operations.js';
import type { StreamFormat } from '../completions/stream.js';
import type { Quotas } from '../completions/quotas.js';
import type { Config } from '../config.js';
import type { Producer } from '../queues/producer.js';
import type { DocumentStore } from '../store/types.js';

/** What this module uses of the service (the hosts pass the whole of it). */
export interface A2aDeps {
  readonly config: Config;
  readonly producer: Producer;
  readonly quotas: Quotas;
  readonly store: DocumentStore;
}

export const A2A_PROTOCOL_VERSION = '0.3.0';

/** JSON-RPC error codes of JSON-RPC 2.0 and of A2A. */
export const RPC = {
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internal: -32603,
  taskNotFound: -32001,
  taskNotCancelable: -32002,
  unsupported: -32004,
} as const;

/** A JSON-RPC error to answer with (HTTP 200, as the binding says). */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

export const RpcRequest = z.object({
  jsonrpc: z.literal('2.0'),
  id: z.union([z.string(), z.number()]).nullable().optional(),
  method: z.string(),
  params: z.unknown().optional(),
});
export type RpcRequest = z.output<typeof RpcRequest>;

const Part = z.object({ kind: z.string(), text: z.string().optional() }).loose();
export const MessageSendParams = z.object({
  message: z
    .object({
      kind: z.literal('message').optional(),
      role: z.literal('user', { error: 'message.role must be user' }),
      parts: z.array(Part).min(1).max(100),
      messageId: z.string().min(1).max(200),
      contextId: z.string().max(200).optional(),
      taskId: z.string().max(200).optional(),
    })
    .loose(),
  configuration: z
    .object({ blocking: z.boolean().optional(), historyLength: z.number().int().min(0).optional() })
    .loose()
    .optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
});
export type MessageSendParams = z.output<typeof MessageSendParams>;
export const TaskParams = z
  .object({ id: z.string().min(1).max(200), historyLength: z.number().int().min(0).optional() })
  .loose();

/** Parses a method's params, or a JSON-RPC invalid-params error naming the field. */
export function paramsOf<T extends z.ZodType>(schema: T, params: unknown): z.output<T> {
  const parsed = schema.safeParse(params);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw new RpcError(RPC.invalidParams, `${issue?.path.join('.') || 'params'}: ${issue?.message ?? 'invalid'}`);
}

/** The agent's card: what it is, where to call it, and that it streams. */
export function agentCard(agent: AgentDoc, url: string) {
  const name = agent.display_name ?? agent.name;
  return {
    protocolVersion: A2A_PROTOCOL_VERSION,
    name,
    description: agent.description ?? `The agent ${name}`,
    url,
    preferredTransport: 'JSONRPC',
    additionalInterfaces: [{ url, transport: 'JSONRPC' }],
    version: VERSION,
    provider: { organization: 'agent-platform', url },
    capabilities: { streaming: true, pushNotifications: false, stateTransitionHistory: false },
    securitySchemes: {
      bearer: {
        type: 'http',
        scheme: 'bearer',
        description: 'An identity-provider access token, or an agent access token of this agent',
      },
    },
    security: [{ bearer: [] }],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [
      {
        id: agent.name,
        name,
        description: agent.description ?? `Answers as ${name}`,
        tags: ['chat'],
        inputModes: ['text/plain'],
        outputModes: ['text/plain'],
      },
    ],
  };
}

/** The Core request of a message: its text parts joined; its context the caller's session to continue. */
export function messageRequest(agent: AgentDoc, params: MessageSendParams): CompletionRequest {
  const { message } = params;
  const other = message.parts.find((p) => p.kind !== 'text' || p.text === undefined);
  if (other)
    throw new RpcError(
      -32005,
      `Only text parts are taken (a ${other.kind} part was sent); attach files through the Core API`,
    );
  const prompt = message.parts.map((p) => p.text ?? '').join('\n');
  if (prompt.trim() === '') throw new RpcError(RPC.invalidParams, 'message.parts: the message has no text');
  if (message.taskId !== undefined)
    throw new RpcError(
      RPC.unsupported,
      `Task ${message.taskId} has ended: send the next message without taskId, with its contextId, to ` +
        `continue the conversation`,
    );
  if (message.contextId !== undefined && !GUID.test(message.contextId))
    throw new RpcError(
      RPC.invalidParams,
      'message.contextId: not a context of this service (send it without one to start a conversation)',
    );
  return {
    user_prompt: prompt,
    agent_name: agent.name,
    ...(message.contextId ? { session_id: message.contextId } : {}),
  };
}

const STATE = { Completed: 'completed', Failed: 'failed', Cancelled: 'canceled' } as const;
const stateOf = (op: OperationDoc) =>
  op.status === 'InProgress' ? (op.status_message === 'Queued' ? 'submitted' : 'working') : STATE[op.status];
/** One of a task's messages: who said it, what, and its id's suffix after the operation's. */
interface TaskMessage {
  role: 'user' | 'agent';
  text: string;
  suffix: 'user' | 'agent' | 'status';
}

const textMessage = (op: OperationDoc, { role, text, suffix }: TaskMessage) => ({
  kind: 'message',
  role,
  parts: [{ kind: 'text', text }],
  messageId: `${op.operation_id}-${suffix}`,
  taskId: op.operation_id,
  contextId: op.request.session_id ?? '',
});

/** The answer as the task's one artifact. */
const answerArtifact = (r: CompletionResponse) => ({
  artifactId: `answer-${r.operation_id}`,
  name: 'answer',
  parts: [{ kind: 'text', text: r.completion }],
  ...(r.citations.length
    ? { metadata: { citations: r.citations.map((c) => ({ title: c.title, source: c.source })) } }
    : {}),
});

/** The task of an operation: its state, the answer as an artifact, and its two messages as history. */
export function presentTask(op: OperationDoc, historyLength?: number) {
  const r = op.result;
  const history = [
    textMessage(op, { role: 'user', text: op.request.user_prompt, suffix: 'user' }),
    ...(r ? [textMessage(op, { role: 'agent', text: r.completion, suffix: 'agent' })] : []),
  ];
  return {
    kind: 'task',
    id: op.operation_id,
    contextId: op.request.session_id ?? '',
    status: {
      state: stateOf(op),
      timestamp: op.last_updated,
      ...(op.status === 'Failed'
        ? { message: textMessage(op, { role: 'agent', text: op.status_message, suffix: 'status' }) }
        : {}),
    },
    ...(r ? { artifacts: [answerArtifact(r)] } : {}),
    history:
      historyLength === undefined ? history : history.slice(history.length - Math.min(historyLength, history.length)),
    metadata: { agent_name: op.request.agent_name ?? '' },
  };
}

/**
 * The caller's own A2A task of this agent; anything else (another user's, another agent's, a Core operation) is
 * TaskNotFound.
 */
export async function readTask(
  s: A2aDeps,
  principal: Principal,
  { agent, id }: { agent: AgentDoc; id: string },
): Promise<OperationDoc> {
  const op = await readOperation(s, principal, id).catch((e: unknown) => {
    if (e instanceof DomainError && e.kind === 'not-found') return undefined;
    throw e;
  });
  if (op?.facade?.protocol !== 'a2a' || op.request.agent_name !== agent.name)
    throw new RpcError(RPC.taskNotFound, `Task ${id} not found`);
  return op;
}

const rpcResult = (id: RpcRequest['id'], result: unknown) =>
  `data: ${JSON.stringify({ jsonrpc: '2.0', id: id ?? null, result })}\n\n`;

/**
 * `message/stream`'s events, each a JSON-RPC response: the task (working), the answer's artifact in
 * appended chunks, then the final status (completed, failed or canceled), stored before it is sent.
 */
export function taskEvents(s: A2aDeps, op: OperationDoc, rpcId: RpcRequest['id']): StreamFormat {
  let opened = false;
  const artifactId = `answer-${op.operation_id}`;
  const ids = { taskId: op.operation_id, contextId: op.request.session_id ?? '' };
  const open = () => {
    if (opened) return '';
    opened = true;
    return rpcResult(rpcId, { ...presentTask(op), status: { state: 'working', timestamp: new Date().toISOString() } });
  };
  const status = (ended: OperationDoc) =>
    rpcResult(rpcId, { kind: 'status-update', ...ids, status: presentTask(ended).status, final: true });
  let first = true;
  return {
    delta(text) {
      const chunk = rpcResult(rpcId, {
        kind: 'artifact-update',
        ...ids,
        artifact: { artifactId, name: 'answer', parts: [{ kind: 'text', text }] },
        append: !first,
        lastChunk: false,
      });
      first = false;
      return `${open()}${chunk}`;
    },
    async completed(result) {
      return `${open()}${status(await endOperation(s, op, { result }))}`;
    },
    async failed(error) {
      return `${open()}${status(await endOperation(s, op, { error }))}`;
    },
  };
}

export const rpcAnswer = (id: RpcRequest['id'], result: unknown) => ({ jsonrpc: '2.0', id: id ?? null, result });
export const rpcFailure = (id: RpcRequest['id'], code: number, message: string) => ({
  jsonrpc: '2.0',
  id: id ?? null,
  error: { code, message },
});
