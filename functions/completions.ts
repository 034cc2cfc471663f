// Completions: synchronous, asynchronous with a status poll, and the
// queue-triggered worker. Each call is a trace boundary; OperationId, InstanceId and ConversationId travel
// as baggage.
import { trace } from '@opentelemetry/api';
import { z } from 'zod';
import { admitted, releasing } from '../shared/completions/admission.js';
import { newOperationId, runCompletion } from '../shared/completions/completion.js';
import { CompletionRequest, CompletionResponse } from '../shared/completions/completion-request.js';
import { cancelOperation, presentOperation, readOperation, startOperation } from '../shared/completions/operations.js';
import { QuotaResponse } from '../shared/completions/quotas.js';
import { cancelStream, streamCompletion } from '../shared/completions/stream.js';
import { replay } from '../shared/completions/stream-log.js';
import { abortRunning, failPoisoned, processOperation } from '../shared/completions/worker.js';
import { SSE_HEADERS, wantsEventStream } from '../shared/http/event-stream.js';
import { defineRoute } from '../shared/http/route.js';
import { InstanceParams } from '../shared/schemas.js';
import { relayed } from '../shared/http/answers.js';
import { json } from '../shared/http/types.js';
import { validationError } from '../shared/errors.js';
import { queueHandler, type QueueHandler } from '../shared/queues/handler.js';
import { OperationMessage, WebhookMessage } from '../shared/queues/messages.js';
import { linkTo, saveTraceContext, withCorrelation } from '../shared/telemetry/correlation.js';
import { savedUrlProblem } from '../shared/net/outbound.js';
import { deliverWebhook } from '../shared/webhooks/handler.js';

const Operation = z
  .object({
    operation_id: z.string(),
    status: z.enum(['InProgress', 'Completed', 'Failed', 'Cancelled']),
    status_message: z.string(),
    last_updated: z.string(),
    result: CompletionResponse.nullable(),
    deliveries: z
      .array(
        z.object({
          attempt: z.number().int(),
          at: z.string(),
          outcome: z.enum(['delivered', 'failed', 'refused']),
          status_code: z.number().int().optional(),
          error: z.string().optional(),
          duration_ms: z.number(),
        }),
      )
      .optional()
      .describe('Webhook delivery attempts, when the operation was started with a callback_url'),
  })
  .meta({ id: 'LongRunningOperation' });

const AsyncCompletionRequest = CompletionRequest.extend({
  callback_url: z
    .string()
    .max(2048)
    .optional()
    .describe('Receives the operation JSON, signed (Svc-Signature), once it ends'),
}).meta({ id: 'AsyncCompletionRequest' });

const OperationParams = InstanceParams.extend({ operationId: z.string().max(100) });
const statusUrl = (instanceId: string, operationId: string) =>
  `/instances/${encodeURIComponent(instanceId)}/async-completions/${encodeURIComponent(operationId)}/status`;

const common = { api: 'core', tag: 'Completions', auth: 'any', errors: 'core', traceBoundary: true } as const;
const rateLimitHeaders = {
  RateLimit: {
    description:
      'The quota closest to its limit: "<name>";r=<remaining>;t=<seconds until reset> (absent when no quota applies)',
    type: 'string',
  },
  'RateLimit-Policy': { description: '"<name>";q=<limit>;w=<window seconds>', type: 'string' },
} as const;
/** What a call that reaches the model can fail with besides its input. */
const upstreamErrors = {
  429: {
    description: 'Quota exceeded (Retry-After header)',
    schema: QuotaResponse,
    headers: { 'Retry-After': { description: 'Seconds to wait', type: 'integer' }, ...rateLimitHeaders },
  },
  502: {
    description: 'The model endpoint failed, refused the request, or answered something that is not a chat completion',
  },
  503: { description: 'The model is rate limited (Retry-After header)' },
  504: { description: 'The model did not answer within the endpoint timeout' },
} as const;
const quota429 = { 429: upstreamErrors[429] };

/** The events of a streamed completion, as text/event-stream. */
const CompletionEvents = z
  .string()
  .describe(
    'Server-sent events: `event: delta` with data {"text": "..."} per piece of the answer, then `event: ' +
      'completed` with the CompletionResponse, or `event: error` with the error body',
  )
  .meta({ id: 'CompletionEventStream' });

export const routes = [
  defineRoute({
    ...common,
    name: 'completions-create',
    method: 'POST',
    path: '/instances/{instanceId}/completions',
    summary: 'Send a prompt to an agent and wait for the answer',
    params: InstanceParams,
    body: CompletionRequest,
    responses: {
      200: {
        description:
          'The completion; with Accept: text/event-stream, the answer as server-sent events while the model writes it',
        content: [
          { contentType: 'application/json', schema: CompletionResponse },
          { contentType: 'text/event-stream', schema: CompletionEvents },
        ],
        headers: {
          ...rateLimitHeaders,
          'x-operation-id': {
            description: 'Streamed answers: the operation id, for the replay and cancel endpoints',
            type: 'string',
          },
        },
      },
      409: {
        description:
          'multitask_strategy reject: another turn of the session is running (SessionBusy); or a background ' +
          'stream with this operation_id exists',
      },
      ...upstreamErrors,
    },
    handler: async ({ services, principal, body, params, request }) => {
      const operationId = body.operation_id ?? newOperationId();
      return withCorrelation(
        { operationId, instanceId: params.instanceId, conversationId: body.session_id, protocol: 'core' },
        principal.upn,
        async () => {
          const options = { operationId, mayRepeat: body.operation_id !== undefined };
          const reply = await admitted(services, { principal, body }, async (turn, reservation) =>
            wantsEventStream(request.header('accept'))
              ? streamCompletion(services, principal, turn, {
                  ...options,
                  clientGone: request.signal,
                  onEnd: () => releasing(services, reservation, Promise.resolve()),
                })
              : json(200, await releasing(services, reservation, runCompletion(services, principal, turn, options))),
          );
          return relayed(reply);
        },
      );
    },
  }),
  defineRoute({
    ...common,
    name: 'completions-stream-replay',
    method: 'GET',
    path: '/instances/{instanceId}/completions/{operationId}/stream',
    summary:
      'The events of a background streamed completion after Last-Event-ID (all when absent), then live ones ' +
      'until it ends; on any instance, only for its starter',
    params: OperationParams,
    responses: {
      200: {
        description: 'The events (numbered as first sent)',
        content: [{ contentType: 'text/event-stream', schema: CompletionEvents }],
        headers: { 'x-operation-id': { description: 'The operation id', type: 'string' } },
      },
    },
    handler: async ({ services, principal, params, request }) => {
      const last = Number(request.header('last-event-id') ?? '0');
      const after = Number.isSafeInteger(last) && last > 0 ? last : 0;
      return {
        status: 200,
        headers: { ...SSE_HEADERS, 'x-operation-id': params.operationId },
        stream: await replay(services, principal, { operationId: params.operationId, after }),
      };
    },
  }),
  defineRoute({
    ...common,
    name: 'completions-stream-cancel',
    method: 'POST',
    path: '/instances/{instanceId}/completions/{operationId}/cancel',
    summary:
      'Stop a streamed completion (only its starter may): its stream ends with an error event, code ' +
      'Cancelled, and no turn is recorded',
    params: OperationParams,
    responses: {
      200: {
        description: 'Cancelled, unless it had already ended',
        schema: z
          .object({ operation_id: z.string(), status: z.enum(['Cancelled', 'Completed', 'Failed']) })
          .meta({ id: 'StreamCancelResult' }),
      },
    },
    handler: async ({ services, principal, params }) =>
      json(200, await cancelStream(services, principal, params.operationId)),
  }),
  defineRoute({
    ...common,
    name: 'completions-async-create',
    method: 'POST',
    path: '/instances/{instanceId}/async-completions',
    summary: 'Start a completion as a long-running operation; poll its status',
    params: InstanceParams,
    body: AsyncCompletionRequest,
    responses: {
      202: {
        description: 'Started',
        headers: {
          Location: { description: 'The status URL of the operation', type: 'string' },
          'Retry-After': { description: 'Seconds to wait before polling the status', type: 'integer' },
          ...rateLimitHeaders,
        },
        schema: z.object({
          operation_id: z.string(),
          status: z.literal('InProgress'),
          status_message: z.string(),
          result: z.null(),
        }),
      },
      409: { description: 'An operation with this operation_id exists' },
      ...quota429,
    },
    handler: async ({ services, principal, body, params }) => {
      const { callback_url: callbackUrl, ...completion } = body;
      const operationId = completion.operation_id ?? newOperationId();
      return withCorrelation(
        { operationId, instanceId: params.instanceId, conversationId: completion.session_id, protocol: 'core' },
        principal.upn,
        async () => {
          if (callbackUrl !== undefined) {
            const problem = await savedUrlProblem(callbackUrl, {
              policy: 'user',
              allowPrivateNetwork: services.config.allowPrivateNetwork,
            });
            if (problem) throw validationError([{ field: 'callback_url', message: `callback_url ${problem}` }]);
          }
          const reply = await admitted(services, { principal, body: completion }, async ({ request }, reservation) => {
            // The start activity's trace context is saved with the operation: polls and the worker link to it.
            // The quota reservation goes with it, given back when the operation ends.
            const trace = saveTraceContext();
            const op = await startOperation(
              services,
              principal,
              { request, operationId, trace },
              { callbackUrl, reservation },
            );
            await services.producer.send(services.config.asyncQueue, {
              key: op.id,
              operation_id: operationId,
            } satisfies OperationMessage);
            const headers = { location: statusUrl(params.instanceId, operationId), 'retry-after': '1' };
            return json(
              202,
              { operation_id: op.operation_id, status: op.status, status_message: op.status_message, result: null },
              headers,
            );
          });
          return relayed(reply);
        },
      );
    },
  }),
  defineRoute({
    ...common,
    name: 'completions-async-status',
    method: 'GET',
    path: '/instances/{instanceId}/async-completions/{operationId}/status',
    summary: 'Status of a long-running completion (only its starter may read it)',
    params: OperationParams,
    responses: { 200: { description: 'The long-running operation', schema: Operation } },
    handler: async ({ services, principal, params }) => {
      const op = await readOperation(services, principal, params.operationId);
      trace.getActiveSpan()?.addLinks(linkTo(op.trace));
      return withCorrelation(
        { operationId: op.operation_id, instanceId: params.instanceId, conversationId: op.request.session_id },
        principal.upn,
        () => Promise.resolve(json(200, presentOperation(op))),
      );
    },
  }),
  defineRoute({
    ...common,
    name: 'completions-async-cancel',
    method: 'POST',
    path: '/instances/{instanceId}/async-completions/{operationId}/cancel',
    summary: 'Cancel a long-running completion (only its starter may); a model call in flight is aborted',
    params: OperationParams,
    responses: { 200: { description: 'The operation: Cancelled, unless it had already ended', schema: Operation } },
    handler: async ({ services, principal, params }) => {
      const abortLocal = (key: string) => abortRunning(services, key);
      const op = await cancelOperation(services, principal, { operationId: params.operationId, abortLocal });
      return json(200, presentOperation(op));
    },
  }),
];

export const queueHandlers: QueueHandler[] = [
  queueHandler({
    name: 'completions-worker',
    queue: { of: 'completions' },
    message: OperationMessage,
    handler: processOperation,
  }),
  queueHandler({
    name: 'completions-poison',
    queue: { of: 'completions', poison: true },
    message: OperationMessage,
    handler: failPoisoned,
  }),
  // Deliveries mostly wait on receivers (each within its attempt deadline and its destination's lane).
  queueHandler({
    name: 'webhooks-deliver',
    queue: { of: 'webhooks' },
    message: WebhookMessage,
    handler: deliverWebhook,
    concurrency: 32,
  }),
];
