// Completions (spec 4.1, 6; CONTRACT.md section 7): synchronous, asynchronous with a status poll, and the
// queue-triggered worker. Each call is a trace boundary; OperationId, InstanceId and ConversationId travel
// as baggage.
import { trace } from '@opentelemetry/api';
import { z } from 'zod';
import type { Principal } from '../shared/auth/principal.js';
import { admit, CompletionRequest, CompletionResponse, newOperationId, runCompletion, type Admitted } from '../shared/completions/completion.js';
import { failPoisoned, presentOperation, processOperation, readOperation, startOperation } from '../shared/completions/operations.js';
import { QuotaResponse } from '../shared/completions/quotas.js';
import { streamCompletion } from '../shared/completions/stream.js';
import { wantsEventStream } from '../shared/http/event-stream.js';
import { defineRoute } from '../shared/http/route.js';
import { InstanceParams } from '../shared/http/schemas.js';
import { json } from '../shared/http/types.js';
import type { QueueHandler } from '../shared/queues/handler.js';
import type { Services } from '../shared/services.js';
import { linkTo, saveTraceContext, withCorrelation } from '../shared/telemetry/correlation.js';

const Operation = z
  .object({
    operation_id: z.string(),
    status: z.enum(['InProgress', 'Completed', 'Failed']),
    status_message: z.string(),
    last_updated: z.string(),
    result: CompletionResponse.nullable(),
  })
  .meta({ id: 'LongRunningOperation' });

const common = { api: 'core', tag: 'Completions', auth: 'any', errors: 'core', traceBoundary: true } as const;
const quota429 = { 429: { description: 'Quota exceeded (Retry-After header)', schema: QuotaResponse } };

/** Checks everything a request can fail on before any work starts or is queued, the quota last. */
async function admitWithQuota(s: Services, principal: Principal, body: CompletionRequest): Promise<Admitted> {
  const admitted = await admit(s, principal, body);
  await s.quotas.enforce(principal, admitted.agent.name);
  return admitted;
}

export const routes = [
  defineRoute({
    ...common,
    name: 'completions-create',
    method: 'POST',
    path: '/instances/{instanceId}/completions',
    summary: 'Send a prompt to an agent and wait for the answer',
    params: InstanceParams,
    body: CompletionRequest,
    responses: { 200: { description: 'The completion', schema: CompletionResponse }, ...quota429 },
    handler: async ({ services, principal, body, params, request }) => {
      const operationId = body.operation_id ?? newOperationId();
      return withCorrelation({ operationId, instanceId: params.instanceId, conversationId: body.session_id }, principal.upn, async () => {
        const admitted = await admitWithQuota(services, principal, body);
        const options = { operationId, mayRepeat: body.operation_id !== undefined };
        if (wantsEventStream(request.header('accept'))) return streamCompletion(services, principal, admitted, options, request.signal);
        return json(200, await runCompletion(services, principal, admitted, options));
      });
    },
  }),
  defineRoute({
    ...common,
    name: 'completions-async-create',
    method: 'POST',
    path: '/instances/{instanceId}/async-completions',
    summary: 'Start a completion as a long-running operation; poll its status',
    params: InstanceParams,
    body: CompletionRequest,
    responses: {
      202: {
        description: 'Started',
        schema: z.object({ operation_id: z.string(), status: z.literal('InProgress'), status_message: z.string(), result: z.null() }),
      },
      409: { description: 'An operation with this operation_id exists' },
      ...quota429,
    },
    handler: async ({ services, principal, body, params }) => {
      const operationId = body.operation_id ?? newOperationId();
      return withCorrelation({ operationId, instanceId: params.instanceId, conversationId: body.session_id }, principal.upn, async () => {
        const { request } = await admitWithQuota(services, principal, body);
        // The start activity's trace context is saved with the operation: polls and the worker link to it.
        const op = await startOperation(services, principal, request, operationId, saveTraceContext());
        await services.producer.send(services.config.asyncQueue, { key: op.id, operation_id: operationId });
        return json(202, { operation_id: op.operation_id, status: op.status, status_message: op.status_message, result: null });
      });
    },
  }),
  defineRoute({
    ...common,
    name: 'completions-async-status',
    method: 'GET',
    path: '/instances/{instanceId}/async-completions/{operationId}/status',
    summary: 'Status of a long-running completion (only its starter may read it)',
    params: InstanceParams.extend({ operationId: z.string().max(100) }),
    responses: { 200: { description: 'The long-running operation', schema: Operation } },
    handler: async ({ services, principal, params }) => {
      const op = await readOperation(services, principal, params.operationId);
      trace.getActiveSpan()?.addLinks(linkTo(op.trace));
      return withCorrelation({ operationId: op.operation_id, instanceId: params.instanceId, conversationId: op.request.session_id }, principal.upn, () =>
        Promise.resolve(json(200, presentOperation(op))),
      );
    },
  }),
];

export const queueHandlers: QueueHandler[] = [
  { name: 'completions-worker', queue: (config) => config.asyncQueue, handler: processOperation },
  { name: 'completions-poison', queue: (config) => `${config.asyncQueue}-poison`, handler: failPoisoned },
];
