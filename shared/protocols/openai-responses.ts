// OpenAI's Responses API over the completion pipeline. Every response is an operation of the status
// container (its id is `resp_` and the operation id), so a stored response is retrieved, and a background one
// polled and cancelled, exactly as an async completion is. `previous_response_id` continues the session the
// earlier response was recorded in; a first response opens a session of its own, so the conversation shows
// in the user's sessions like any other.
import { z } from 'zod';
import type { Principal } from '../auth/principal.js';
import { badRequest, notFound } from '../errors.js';
import { sseEvent } from '../http/event-stream.js';
import type { CompletionRequest, CompletionResponse, Facade } from '../completions/completion-request.js';
import { endOperation, readOperation, type OperationDoc, type OperationStatus } from '../completions/operations.js';
import type { StreamFormat } from '../completions/stream.js';
import { isWebPage, type Citation } from '../knowledge/retrieval.js';
import { modelFields, openaiErrorBody, Sampling, splitConversation, textOf } from './openai-chat.js';
import type { Quotas } from '../completions/quotas.js';
import type { Config } from '../config.js';
import type { Producer } from '../queues/producer.js';
import type { DocumentStore } from '../store/types.js';

/** What this module uses of the service (the hosts pass the whole of it). */
export interface OpenaiResponsesDeps {
  readonly config: Config;
  readonly producer: Producer;
  readonly quotas: Quotas;
  readonly store: DocumentStore;
}

const Part = z.object({ type: z.string(), text: z.string().optional() }).loose();
const InputMessage = z
  .object({
    type: z.literal('message').optional(),
    role: z.enum(['user', 'assistant', 'system', 'developer'], {
      error: 'input: only messages (user, assistant, system, developer) are taken',
    }),
    content: z.union([z.string(), z.array(Part)]),
  })
  .loose();

/** `text.format`: plain text, a JSON object, or JSON matching a schema (passed to the model as its response format). */
const TextFormat = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text') }),
  z.object({ type: z.literal('json_object') }),
  z.object({
    type: z.literal('json_schema'),
    name: z.string().min(1).max(64),
    description: z.string().optional(),
    schema: z.record(z.string(), z.unknown()),
    strict: z.boolean().nullable().optional(),
  }),
]);

export const ResponseCreateRequest = z
  .object({
    model: z
      .string({ error: 'model is required: the name of an agent' })
      .min(1, 'model is required: the name of an agent'),
    input: z.union([
      z.string().min(1, 'input must not be empty'),
      z.array(InputMessage).min(1, 'input must hold at least the user message').max(1000),
    ]),
    instructions: z.string().max(32_000).nullable().optional(),
    previous_response_id: z.string().max(200).nullable().optional(),
    stream: z.boolean().nullable().optional(),
    background: z.boolean().nullable().optional(),
    store: z.boolean().nullable().optional(),
    ...Sampling,
    max_output_tokens: z.number().int().positive().nullable().optional(),
    text: z.object({ format: TextFormat.optional() }).loose().nullable().optional(),
    metadata: z
      .record(z.string().max(64), z.string().max(512))
      .refine((m) => Object.keys(m).length <= 16, 'metadata holds at most 16 keys')
      .nullable()
      .optional(),
    tools: z
      .array(z.unknown())
      .max(0, 'tools: an agent runs its own tools; functions of the client cannot be offered to it')
      .nullable()
      .optional(),
  })
  .loose()
  .meta({ id: 'ResponseCreateRequest' });
export type ResponseCreateRequest = z.output<typeof ResponseCreateRequest>;

export const responseId = (operationId: string) => `resp_${operationId}`;
const messageId = (operationId: string) => `msg_${operationId}`;

/** The operation id of a response id; 404 for anything that is not one. */
export function operationOf(id: string): string {
  if (!id.startsWith('resp_') || id.length <= 5) throw notFound(`Response with id '${id}' not found.`);
  return id.slice(5);
}

/** The caller's own stored response (an operation started as one); anyone else's, and a Core operation, is 404. */
export async function readResponse(s: OpenaiResponsesDeps, principal: Principal, id: string): Promise<OperationDoc> {
  const op = await readOperation(s, principal, operationOf(id)).catch(() => undefined);
  if (!op?.response) throw notFound(`Response with id '${id}' not found.`);
  return op;
}

/** The Core request, the facade's additions and what the response keeps, of a Responses request. */
export async function responseRequest(
  s: OpenaiResponsesDeps,
  principal: Principal,
  body: ResponseCreateRequest,
): Promise<{ request: CompletionRequest; facade: Facade; format: Record<string, unknown> }> {
  const messages =
    typeof body.input === 'string'
      ? [{ role: 'user', content: body.input }]
      : body.input.map((m, i) => ({ role: m.role, content: textOf(m.content, `input[${i}].content`) }));
  const { prompt, history } = splitConversation(messages, 'input');
  // The caller's instructions are the caller's text (the agent's prompt is the system message).
  if (body.instructions) history.unshift({ role: 'user', content: body.instructions });
  const format = body.text?.format ?? { type: 'text' };
  const parameters = modelFields({
    temperature: body.temperature,
    top_p: body.top_p,
    max_tokens: body.max_output_tokens,
    response_format:
      format.type === 'json_schema'
        ? {
            type: 'json_schema',
            json_schema: {
              name: format.name,
              schema: format.schema,
              strict: format.strict ?? null,
              ...(format.description ? { description: format.description } : {}),
            },
          }
        : format.type === 'json_object'
          ? format
          : undefined,
  });
  let sessionId: string | undefined;
  if (body.previous_response_id) {
    const previous = await readResponse(s, principal, body.previous_response_id).catch(() => {
      throw badRequest(`Previous response with id '${body.previous_response_id}' not found.`, [
        { field: 'previous_response_id', message: 'not found' },
      ]);
    });
    sessionId = previous.request.session_id;
  }
  return {
    request: { user_prompt: prompt, agent_name: body.model, ...(sessionId ? { session_id: sessionId } : {}) },
    facade: { protocol: 'openai', history, parameters },
    format,
  };
}

const STATUS: Record<OperationStatus, string> = {
  InProgress: 'in_progress',
  Completed: 'completed',
  Failed: 'failed',
  Cancelled: 'cancelled',
};

/** Citations where Responses' output text has a place for them: URLs as URL citations, documents as file citations. */
const annotations = (citations: readonly Citation[]) =>
  citations.map((c) =>
    isWebPage(c)
      ? { type: 'url_citation', url: c.source, title: c.title, start_index: 0, end_index: 0 }
      : { type: 'file_citation', file_id: c.id, filename: c.title, index: 0 },
  );

const outputText = (r: CompletionResponse) => ({
  type: 'output_text',
  text: r.completion,
  annotations: annotations(r.citations),
  logprobs: [],
});
const outputMessage = (r: CompletionResponse, status: string) => ({
  type: 'message',
  id: messageId(r.operation_id),
  status,
  role: 'assistant',
  content: [outputText(r)],
});

/** The response object of an operation, as OpenAI writes one. */
export function presentResponse(op: OperationDoc) {
  const meta = op.response;
  const status = op.status === 'InProgress' && op.status_message === 'Queued' ? 'queued' : STATUS[op.status];
  const r = op.result;
  return {
    id: responseId(op.operation_id),
    object: 'response',
    created_at: Math.floor(Date.parse(op.created_on) / 1000),
    status,
    background: meta?.background ?? false,
    model: op.request.agent_name ?? '',
    output: r ? [outputMessage(r, 'completed')] : [],
    usage: r
      ? {
          input_tokens: r.prompt_tokens,
          input_tokens_details: { cached_tokens: 0 },
          output_tokens: r.completion_tokens,
          output_tokens_details: { reasoning_tokens: 0 },
          total_tokens: r.total_tokens,
        }
      : null,
    previous_response_id: meta?.previous_response_id ?? null,
    error: op.status === 'Failed' ? { code: 'server_error', message: op.status_message } : null,
    incomplete_details: null,
    instructions: null,
    metadata: meta?.metadata ?? {},
    parallel_tool_calls: false,
    tool_choice: 'auto',
    tools: [],
    text: { format: meta?.format ?? { type: 'text' } },
    store: true,
    truncation: 'disabled',
    temperature: null,
    top_p: null,
    max_output_tokens: null,
    user: null,
  };
}

/**
 * The events of a streamed response, as Responses names them: the response created and in progress, the
 * message and its text part added, the text's deltas, then everything done and `response.completed` (or
 * `response.failed`), each numbered by `sequence_number`. The response is stored as ended before its last
 * event is sent, so a retrieval right after finds it so.
 */
export function responseEvents(s: OpenaiResponsesDeps, op: OperationDoc): StreamFormat {
  let sequence = 0;
  let opened = false;
  const event = (type: string, fields: Record<string, unknown>) =>
    sseEvent(type, { type, sequence_number: sequence++, ...fields });
  const itemId = messageId(op.operation_id);
  const at = { item_id: itemId, output_index: 0, content_index: 0 };
  const open = () => {
    if (opened) return '';
    opened = true;
    const running = { ...presentResponse(op), status: 'in_progress' };
    return [
      event('response.created', { response: running }),
      event('response.in_progress', { response: running }),
      event('response.output_item.added', {
        output_index: 0,
        item: { type: 'message', id: itemId, status: 'in_progress', role: 'assistant', content: [] },
      }),
      event('response.content_part.added', {
        ...at,
        part: { type: 'output_text', text: '', annotations: [], logprobs: [] },
      }),
    ].join('');
  };
  return {
    delta: (text) => `${open()}${event('response.output_text.delta', { ...at, delta: text, logprobs: [] })}`,
    async completed(result) {
      const ended = await endOperation(s, op, { result });
      return [
        open(),
        event('response.output_text.done', { ...at, text: result.completion, logprobs: [] }),
        event('response.content_part.done', { ...at, part: outputText(result) }),
        event('response.output_item.done', { output_index: 0, item: outputMessage(result, 'completed') }),
        event('response.completed', { response: presentResponse(ended) }),
      ].join('');
    },
    async failed(error) {
      const ended = await endOperation(s, op, { error });
      const body = openaiErrorBody(error);
      const failure = typeof body === 'object' && body !== null && 'error' in body ? body.error : undefined;
      return `${open()}${event('response.failed', { response: { ...presentResponse(ended), error: failure } })}`;
    },
  };
}
