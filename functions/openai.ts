// The OpenAI-compatible API of an instance (docs/protocols.md): the agents the caller may use as models,
// Chat Completions and Responses, each mapped onto the completion pipeline, so roles, agent access tokens,
// quotas, shielding, retrieval, tools, usage and telemetry are those of a Core completion. Errors are
// written in OpenAI's shape.
import { z } from 'zod';
import { admitted, releasing } from '../shared/completions/admission.js';
import { newOperationId, runCompletion } from '../shared/completions/completion.js';
import { cancelOperation } from '../shared/completions/operations.js';
import { streamCompletion } from '../shared/completions/stream.js';
import { abortRunning } from '../shared/completions/worker.js';
import { badRequest } from '../shared/errors.js';
import { defineRoute } from '../shared/http/route.js';
import { InstanceParams } from '../shared/schemas.js';
import { relayed, type RelayedReply } from '../shared/http/answers.js';
import { json, type Reply } from '../shared/http/types.js';
import { agentOrNotFound, usableAgents } from '../shared/providers/agent-access.js';
import type { AgentDoc } from '../shared/providers/types/agent.js';
import {
  asModelError,
  modelNotFound,
  chatChunks,
  chatCompletion,
  ChatCompletionRequest,
  chatRequest,
} from '../shared/protocols/openai-chat.js';
import {
  presentResponse,
  readResponse,
  ResponseCreateRequest,
  responseEvents,
  responseRequest,
} from '../shared/protocols/openai-responses.js';
import { withCorrelation } from '../shared/telemetry/correlation.js';
import { runAsOperation } from '../shared/protocols/operation-run.js';

const BASE = '/instances/{instanceId}/openai/v1';
const common = { api: 'core', tag: 'OpenAI-compatible API', auth: 'protocol', errors: 'openai' } as const;
const OpenAIError = z
  .object({
    error: z.object({
      message: z.string(),
      type: z.string(),
      param: z.string().nullable(),
      code: z.string().nullable(),
    }),
  })
  .meta({ id: 'OpenAIError' });
const errors = {
  400: { description: 'The request is not valid (OpenAI error shape)', schema: OpenAIError },
  404: { description: 'No agent of that name that the caller may use (code model_not_found)', schema: OpenAIError },
  429: { description: 'A quota of the agent is spent (Retry-After)', schema: OpenAIError },
  502: { description: 'The model endpoint failed', schema: OpenAIError },
  503: { description: 'The model is rate limited', schema: OpenAIError },
  504: { description: 'The model did not answer in time', schema: OpenAIError },
} as const;

const Model = z
  .object({ id: z.string(), object: z.literal('model'), created: z.number().int(), owned_by: z.string() })
  .meta({ id: 'OpenAIModel' });
const model = (agent: AgentDoc) => ({
  id: agent.name,
  object: 'model' as const,
  created: Math.floor(Date.parse(agent.created_on) / 1000),
  owned_by: 'agent-platform',
});
const seconds = () => Math.floor(Date.now() / 1000);
const ResponseParams = InstanceParams.extend({ responseId: z.string().max(200) });
const ResponseObject = z
  .record(z.string(), z.unknown())
  .describe("OpenAI's Response object")
  .meta({ id: 'OpenAIResponse' });

/**
 * A facade's request run as `model`: an agent that is missing or not the caller's is OpenAI's model_not_found.
 * Its answer is the completion pipeline's (a stream or an operation's JSON), relayed.
 */
const asModel = (model: string, run: Promise<Reply>): Promise<RelayedReply> =>
  run.then(relayed, (e: unknown) => {
    throw asModelError(e, model);
  });

export const routes = [
  defineRoute({
    ...common,
    name: 'openai-models-list',
    method: 'GET',
    path: `${BASE}/models`,
    summary: 'The agents the caller may use, as models (id = agent name)',
    params: InstanceParams,
    responses: {
      200: { description: 'The models', schema: z.object({ object: z.literal('list'), data: z.array(Model) }) },
    },
    handler: async ({ services, principal }) =>
      json(200, { object: 'list', data: (await usableAgents(services, principal)).map(({ agent }) => model(agent)) }),
  }),
  defineRoute({
    ...common,
    name: 'openai-models-get',
    method: 'GET',
    path: `${BASE}/models/{model}`,
    summary: 'One agent the caller may use, as a model',
    params: InstanceParams.extend({ model: z.string().max(200) }),
    responses: { 200: { description: 'The model', schema: Model }, 404: errors[404] },
    handler: async ({ services, principal, params }) => {
      return json(
        200,
        model(await agentOrNotFound(services, principal, params.model, { refusal: () => modelNotFound(params.model) })),
      );
    },
  }),
  defineRoute({
    ...common,
    traceBoundary: true,
    name: 'openai-chat-completions',
    method: 'POST',
    path: `${BASE}/chat/completions`,
    summary:
      'Chat Completions: model = agent name; the messages before the last user message are the history; ' +
      'stream answers chat.completion.chunk events ending with data: [DONE]',
    params: InstanceParams,
    body: ChatCompletionRequest,
    responses: {
      200: {
        description: 'The chat completion, or its chunks as server-sent events',
        content: [
          {
            contentType: 'application/json',
            schema: z.record(z.string(), z.unknown()).describe("OpenAI's ChatCompletion object"),
          },
          {
            contentType: 'text/event-stream',
            schema: z.string().describe('data: chat.completion.chunk, ..., data: [DONE]'),
          },
        ],
      },
      ...errors,
    },
    handler: async ({ services, principal, params, body, request }) => {
      const operationId = newOperationId();
      const { request: core, facade } = chatRequest(body);
      const created = seconds();
      return withCorrelation({ operationId, instanceId: params.instanceId, protocol: 'openai' }, principal.upn, () =>
        asModel(
          body.model,
          admitted(
            services,
            { principal, body: core },
            async (turn, reservation) => {
              const options = { operationId, mayRepeat: false };
              if (body.stream) {
                const format = chatChunks({
                  operationId,
                  model: turn.agent.name,
                  created,
                  includeUsage: body.stream_options?.include_usage === true,
                });
                return streamCompletion(services, principal, turn, {
                  ...options,
                  clientGone: request.signal,
                  onEnd: () => releasing(services, reservation, Promise.resolve()),
                  format,
                });
              }
              const result = await releasing(services, reservation, runCompletion(services, principal, turn, options));
              return json(200, chatCompletion(result, turn.agent.name, created), { 'x-operation-id': operationId });
            },
            { facade },
          ),
        ),
      );
    },
  }),
  defineRoute({
    ...common,
    traceBoundary: true,
    name: 'openai-responses-create',
    method: 'POST',
    path: `${BASE}/responses`,
    summary:
      'Responses: model = agent name; previous_response_id continues its session; stream answers Responses ' +
      'events; background runs on the queue (retrieve, cancel)',
    params: InstanceParams,
    body: ResponseCreateRequest,
    responses: {
      200: {
        description: 'The response (queued when background), or its events as server-sent events',
        content: [
          { contentType: 'application/json', schema: ResponseObject },
          {
            contentType: 'text/event-stream',
            schema: z
              .string()
              .describe(
                'response.created, response.in_progress, ..., response.output_text.delta, ..., response.completed',
              ),
          },
        ],
      },
      ...errors,
    },
    handler: async ({ services, principal, params, body, request }) => {
      if (body.background && body.stream)
        throw badRequest('stream: a background response is not streamed here; retrieve it until it ends', [
          { field: 'stream', message: 'not with background' },
        ]);
      if (body.store === false)
        throw badRequest(
          'store: responses are always stored (they are the conversation a later previous_response_id ' +
            'continues); leave store out',
          [{ field: 'store', message: 'must not be false' }],
        );
      const operationId = newOperationId();
      const { request: core, facade, format } = await responseRequest(services, principal, body);
      const response = {
        previous_response_id: body.previous_response_id ?? null,
        background: body.background === true,
        format,
        metadata: body.metadata ?? {},
      };
      const mode = body.background ? 'queue' : body.stream ? 'stream' : 'wait';
      return withCorrelation(
        { operationId, instanceId: params.instanceId, conversationId: core.session_id, protocol: 'openai' },
        principal.upn,
        () =>
          asModel(
            body.model,
            runAsOperation(services, principal, {
              request: core,
              operationId,
              facade,
              mode,
              response,
              present: presentResponse,
              format: (op) => responseEvents(services, op),
              throwOnFailure: () => true,
              signal: request.signal,
            }),
          ),
      );
    },
  }),
  defineRoute({
    ...common,
    name: 'openai-responses-get',
    method: 'GET',
    path: `${BASE}/responses/{responseId}`,
    summary: "A stored response of the caller (another user's is 404)",
    params: ResponseParams,
    responses: {
      200: { description: 'The response', schema: ResponseObject },
      404: { description: 'No such response of the caller', schema: OpenAIError },
    },
    handler: async ({ services, principal, params }) =>
      json(200, presentResponse(await readResponse(services, principal, params.responseId))),
  }),
  defineRoute({
    ...common,
    name: 'openai-responses-cancel',
    method: 'POST',
    path: `${BASE}/responses/{responseId}/cancel`,
    summary: 'Cancels a background response of the caller; a model call in flight is aborted',
    params: ResponseParams,
    responses: {
      200: { description: 'The response: cancelled, unless it had already ended', schema: ResponseObject },
      400: errors[400],
      404: { description: 'No such response of the caller', schema: OpenAIError },
    },
    handler: async ({ services, principal, params }) => {
      const op = await readResponse(services, principal, params.responseId);
      if (!op.response?.background)
        throw badRequest('Only responses created with background=true can be cancelled', [
          { field: 'response_id', message: 'not a background response' },
        ]);
      return json(
        200,
        presentResponse(
          await cancelOperation(services, principal, {
            operationId: op.operation_id,
            abortLocal: (key) => abortRunning(services, key),
          }),
        ),
      );
    },
  }),
];
