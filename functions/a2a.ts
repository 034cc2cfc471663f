// Each agent as an A2A agent (protocol 0.3, JSON-RPC; docs/protocols.md): its card, and message/send,
// message/stream, tasks/get and tasks/cancel mapped onto completions and operations. Bearer identity-provider
// tokens or an agent access token; an agent the caller may not use is 404, its card too.
import type { CompletionDeps } from '../shared/completions/completion-deps.js';
import { z } from 'zod';
import type { Principal } from '../shared/auth/principal.js';
import { newOperationId } from '../shared/completions/completion.js';
import { cancelOperation } from '../shared/completions/operations.js';
import { cancelStream } from '../shared/completions/stream.js';
import { abortRunning } from '../shared/completions/worker.js';
import { DomainError } from '../shared/errors.js';
import { defineRoute } from '../shared/http/route.js';
import { relayed, type RelayedReply } from '../shared/http/answers.js';
import { json } from '../shared/http/types.js';
import { agentOrNotFound } from '../shared/providers/agent-access.js';
import { ResourceName } from '../shared/providers/types/resource-type.js';
import type { AgentDoc } from '../shared/providers/types/agent.js';
import {
  agentCard,
  messageRequest,
  MessageSendParams,
  paramsOf,
  presentTask,
  readTask,
  RPC,
  rpcAnswer,
  rpcFailure,
  RpcError,
  RpcRequest,
  taskEvents,
  TaskParams,
} from '../shared/protocols/a2a.js';
import { runAsOperation } from '../shared/protocols/operation-run.js';
import { withCorrelation } from '../shared/telemetry/correlation.js';
import type { Producer } from '../shared/queues/producer.js';

/** What this module uses of the service (the hosts pass the whole of it). */
export interface A2aRoutesDeps extends CompletionDeps {
  readonly producer: Producer;
}

const common = { api: 'core', tag: 'A2A', auth: 'protocol', errors: 'core' } as const;
const AgentParams = z.object({ instanceId: z.string(), agentName: ResourceName });
/** The agent's A2A endpoint under the Core API's public URL (configuration, never the request's headers). */
const endpoint = (s: A2aRoutesDeps, instanceId: string, agent: string) =>
  `${s.config.publicUrls.core}/instances/${instanceId}/a2a/${encodeURIComponent(agent)}`;

/** A JSON-RPC call on one agent, by one caller. */
interface TaskCall {
  principal: Principal;
  agent: AgentDoc;
  rpc: RpcRequest;
}

/** message/send and message/stream: a completion run as a task, in the message's context (session). */
async function send(
  s: A2aRoutesDeps,
  { principal, agent, rpc, stream, signal }: TaskCall & { stream: boolean; signal: AbortSignal },
): Promise<RelayedReply> {
  const params = paramsOf(MessageSendParams, rpc.params);
  const core = messageRequest(agent, params);
  const operationId = newOperationId();
  const mode = stream ? 'stream' : params.configuration?.blocking === false ? 'queue' : 'wait';
  const reply = await withCorrelation(
    { operationId, instanceId: s.config.instanceId, conversationId: core.session_id, protocol: 'a2a' },
    principal.upn,
    () =>
      runAsOperation(s, principal, {
        request: core,
        operationId,
        facade: { protocol: 'a2a' },
        mode,
        present: (op) => rpcAnswer(rpc.id, presentTask(op, params.configuration?.historyLength)),
        format: (op) => taskEvents(s, op, rpc.id),
        // A spent budget or quota is refused as at admission (429), not as a task that failed.
        throwOnFailure: (e) => e instanceof DomainError && e.kind === 'rate-limited',
        signal,
      }),
  );
  return relayed(reply);
}

/**
 * tasks/cancel: a queued or running task ends canceled (its model call aborted where it runs); an ended one is not
 * cancelable.
 */
async function cancel(s: A2aRoutesDeps, { principal, agent, rpc }: TaskCall): Promise<unknown> {
  const { id } = paramsOf(TaskParams, rpc.params);
  const task = await readTask(s, principal, { agent, id });
  if (task.status !== 'InProgress')
    throw new RpcError(RPC.taskNotCancelable, `Task ${id} has ended (${presentTask(task).status.state})`);
  // A streamed task stops at once on this instance; elsewhere it stops recording when it ends.
  await cancelStream(s, principal, id).catch(() => undefined);
  const ended = await cancelOperation(s, principal, { operationId: id, abortLocal: (key) => abortRunning(s, key) });
  if (ended.status === 'InProgress') throw new RpcError(RPC.taskNotCancelable, `Task ${id} is recording its answer`);
  return presentTask(ended);
}

export const routes = [
  defineRoute({
    ...common,
    name: 'a2a-agent-card',
    method: 'GET',
    path: '/instances/{instanceId}/a2a/{agentName}/.well-known/agent-card.json',
    summary: "The agent's A2A card: its name, description, skills, and where to send messages",
    params: AgentParams,
    responses: {
      200: {
        description: 'The agent card (A2A 0.3)',
        schema: z.record(z.string(), z.unknown()).meta({ id: 'A2AAgentCard' }),
      },
      404: { description: 'No such agent the caller may use' },
    },
    handler: async ({ services, principal, params }) =>
      json(
        200,
        agentCard(
          await agentOrNotFound(services, principal, params.agentName),
          endpoint(services, params.instanceId, params.agentName),
        ),
      ),
  }),
  defineRoute({
    ...common,
    traceBoundary: true,
    name: 'a2a-rpc',
    method: 'POST',
    path: '/instances/{instanceId}/a2a/{agentName}',
    summary: 'A2A JSON-RPC: message/send, message/stream (server-sent events), tasks/get, tasks/cancel',
    params: AgentParams,
    body: z.record(z.string(), z.unknown()).describe('A JSON-RPC 2.0 request of A2A 0.3'),
    responses: {
      200: {
        description:
          'The JSON-RPC response (errors too, as JSON-RPC errors); message/stream answers server-sent events, ' +
          'each a JSON-RPC response',
        content: [
          { contentType: 'application/json', schema: z.record(z.string(), z.unknown()) },
          { contentType: 'text/event-stream', schema: z.string() },
        ],
      },
      404: { description: 'No such agent the caller may use' },
      429: { description: 'A quota of the agent is spent (Retry-After)' },
    },
    handler: async ({ services, principal, params, body, request }) => {
      const parsed = RpcRequest.safeParse(body);
      if (!parsed.success) return json(200, rpcFailure(null, RPC.invalidRequest, 'Not a JSON-RPC 2.0 request'));
      const rpc = parsed.data;
      const agent = await agentOrNotFound(services, principal, params.agentName);
      try {
        switch (rpc.method) {
          case 'message/send':
            return await send(services, { principal, agent, rpc, stream: false, signal: request.signal });
          case 'message/stream':
            return await send(services, { principal, agent, rpc, stream: true, signal: request.signal });
          case 'tasks/get': {
            const { id, historyLength } = paramsOf(TaskParams, rpc.params);
            return json(
              200,
              rpcAnswer(rpc.id, presentTask(await readTask(services, principal, { agent, id }), historyLength)),
            );
          }
          case 'tasks/cancel':
            return json(200, rpcAnswer(rpc.id, await cancel(services, { principal, agent, rpc })));
          case 'tasks/resubscribe':
          case 'tasks/pushNotificationConfig/set':
          case 'tasks/pushNotificationConfig/get':
          case 'tasks/pushNotificationConfig/list':
          case 'tasks/pushNotificationConfig/delete':
          case 'agent/getAuthenticatedExtendedCard':
            throw new RpcError(RPC.unsupported, `${rpc.method} is not supported by this agent (its card says so)`);
          default:
            throw new RpcError(RPC.methodNotFound, `Method ${rpc.method} not found`);
        }
      } catch (e) {
        if (e instanceof RpcError) return json(200, rpcFailure(rpc.id, e.code, e.message));
        // Input the pipeline refused (a session that is not the caller's, a prompt too long) is invalid params.
        if (e instanceof DomainError && (e.kind === 'invalid' || e.kind === 'not-found'))
          return json(200, rpcFailure(rpc.id, RPC.invalidParams, e.message));
        throw e;
      }
    },
  }),
];
