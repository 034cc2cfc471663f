// OpenAI's Chat Completions API over the completion pipeline: `model` names the agent, the last message is
// the prompt and the ones before it the history, the request's sampling and format fields go to the model,
// and the answer (or its stream of chunks) is written in OpenAI's shapes. No session: the client keeps the
// conversation, as it does with OpenAI.
import { z } from 'zod';
import { badRequest, DomainError } from '../errors.js';
import type { ChatMessage } from '../models/wire.js';
import type { CompletionRequest, CompletionResponse, Facade } from '../completions/completion-request.js';
import { isAgentRefusal } from '../completions/admit-request.js';
import type { StreamFormat } from '../completions/stream.js';
import { isWebPage, type Citation } from '../knowledge/retrieval.js';
import { CallCancelledError } from '../models/upstream-errors.js';
import { errorReply } from '../http/envelopes.js';

/** A message's content: text, or parts of which only text ones are taken. */
const Content = z
  .union([z.string(), z.array(z.object({ type: z.string(), text: z.string().optional() }).loose())])
  .nullable()
  .optional();

const Message = z
  .object({
    role: z.enum(['system', 'developer', 'user', 'assistant', 'tool', 'function'], {
      error: 'role must be system, developer, user or assistant',
    }),
    content: Content,
    name: z.string().optional(),
  })
  .loose();

/** JSON Schema response formats, as Chat Completions takes them (Responses' `text.format` is mapped onto this). */
export const ResponseFormat = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text') }),
  z.object({ type: z.literal('json_object') }),
  z.object({
    type: z.literal('json_schema'),
    json_schema: z.object({
      name: z.string().min(1).max(64),
      description: z.string().optional(),
      schema: z.record(z.string(), z.unknown()).optional(),
      strict: z.boolean().nullable().optional(),
    }),
  }),
]);

/** The sampling fields both OpenAI APIs share, passed to the model as given. */
export const Sampling = {
  temperature: z.number().min(0).max(2).nullable().optional(),
  top_p: z.number().min(0).max(1).nullable().optional(),
};

/**
 * The request; fields clients send that do not change the answer (`user`, `logprobs`, ...) are accepted and ignored.
 */
export const ChatCompletionRequest = z
  .object({
    model: z
      .string({ error: 'model is required: the name of an agent' })
      .min(1, 'model is required: the name of an agent'),
    messages: z.array(Message).min(1, 'messages must hold at least the user message').max(1000),
    stream: z.boolean().nullable().optional(),
    stream_options: z.object({ include_usage: z.boolean().optional() }).loose().nullable().optional(),
    ...Sampling,
    max_tokens: z.number().int().positive().nullable().optional(),
    max_completion_tokens: z.number().int().positive().nullable().optional(),
    response_format: ResponseFormat.optional(),
    stop: z
      .union([z.string(), z.array(z.string()).max(4)])
      .nullable()
      .optional(),
    seed: z.number().int().nullable().optional(),
    frequency_penalty: z.number().min(-2).max(2).nullable().optional(),
    presence_penalty: z.number().min(-2).max(2).nullable().optional(),
    n: z.literal(1, { error: 'n: an agent gives one answer per request' }).nullable().optional(),
    tools: z
      .array(z.unknown())
      .max(0, 'tools: an agent runs its own tools; functions of the client cannot be offered to it')
      .nullable()
      .optional(),
  })
  .loose()
  .meta({ id: 'ChatCompletionRequest' });
export type ChatCompletionRequest = z.output<typeof ChatCompletionRequest>;

/** The text of a message's content; a part other than text is refused. */
export function textOf(content: z.output<typeof Content>, field: string): string {
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  return content
    .map((part, i) => {
      if (
        (part.type === 'text' || part.type === 'input_text' || part.type === 'output_text') &&
        part.text !== undefined
      )
        return part.text;
      throw badRequest(
        `${field}[${i}]: only text parts are taken here; attach files through the Core API's file upload`,
        [{ field: `${field}[${i}]`, message: 'only text parts are taken' }],
      );
    })
    .join('\n');
}

/** A conversation as OpenAI clients send it: earlier messages, then the user's. Both APIs split it so. */
export function splitConversation(
  messages: readonly { role: string; content: string }[],
  field: string,
): { prompt: string; history: ChatMessage[] } {
  const last = messages.at(-1);
  if (last?.role !== 'user' || last.content.trim() === '')
    throw badRequest(`${field}: the last message must be the user's, with text`, [
      { field, message: "the last message must be the user's, with text" },
    ]);
  const history = messages.slice(0, -1).map((m, i): ChatMessage => {
    if (m.role === 'tool' || m.role === 'function')
      throw badRequest(`${field}[${i}]: tool results are not taken; an agent runs its own tools`, [
        { field: `${field}[${i}]`, message: 'tool results are not taken' },
      ]);
    // A caller's system or developer message is the caller's text, not the agent's instructions: it reaches the model
    // as theirs.
    return { role: m.role === 'assistant' ? 'assistant' : 'user', content: m.content };
  });
  return { prompt: last.content, history };
}

/** The model's request fields from OpenAI's: only those given. */
export function modelFields(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined && v !== null));
}

/** The Core request and the facade's additions of a chat request. */
export function chatRequest(body: ChatCompletionRequest): { request: CompletionRequest; facade: Facade } {
  const { prompt, history } = splitConversation(
    body.messages.map((m, i) => ({ role: m.role, content: textOf(m.content, `messages[${i}].content`) })),
    'messages',
  );
  const parameters = modelFields({
    temperature: body.temperature,
    top_p: body.top_p,
    max_tokens: body.max_completion_tokens ?? body.max_tokens,
    response_format: body.response_format,
    stop: body.stop,
    seed: body.seed,
    frequency_penalty: body.frequency_penalty,
    presence_penalty: body.presence_penalty,
  });
  return {
    request: { user_prompt: prompt, agent_name: body.model },
    facade: { protocol: 'openai', history, parameters },
  };
}

/**
 * An admission failure as OpenAI says it: an agent missing or not the caller's is a model that does not exist for them.
 */
export const asModelError = (e: unknown, model: string): unknown => (isAgentRefusal(e) ? modelNotFound(model) : e);

/** OpenAI's 404 for a model: the same whether the agent does not exist or is not the caller's. */
export function modelNotFound(model: string): DomainError {
  const message = `The model \`${model}\` does not exist or you do not have access to it.`;
  return new DomainError('not-found', 'ModelNotFound', message, { details: [{ field: 'model', message }] });
}

/** Citations as URL citations: the chat message has no other place for them. Sources that are not URLs stay out. */
export const urlCitations = (citations: readonly Citation[]) =>
  citations.filter(isWebPage).map((c) => ({
    type: 'url_citation' as const,
    url_citation: { url: c.source, title: c.title, start_index: 0, end_index: 0 },
  }));

const usageOf = (r: CompletionResponse) => ({
  prompt_tokens: r.prompt_tokens,
  completion_tokens: r.completion_tokens,
  total_tokens: r.total_tokens,
});

/**
 * The ids OpenAI's objects carry, from the operation id (the same id the usage record and the session's messages
 * carry).
 */
export const chatId = (operationId: string) => `chatcmpl-${operationId}`;

export function chatCompletion(r: CompletionResponse, model: string, created: number) {
  return {
    id: chatId(r.operation_id),
    object: 'chat.completion',
    created,
    model,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: r.completion, refusal: null, annotations: urlCitations(r.citations) },
        logprobs: null,
        finish_reason: 'stop',
      },
    ],
    usage: usageOf(r),
    system_fingerprint: null,
  };
}

const data = (value: unknown) => `data: ${JSON.stringify(value)}\n\n`;

/** A chunk stream's fixed parts: the operation (the chunks' id), the model, the creation time, and usage or not. */
export interface ChunkStream {
  operationId: string;
  model: string;
  created: number;
  includeUsage: boolean;
}

/**
 * Chat completion chunks: the first carries the role, each then a piece of the text, the last the finish
 * reason (and the citations); with `include_usage` every chunk has `usage: null` and one more chunk without
 * choices carries it. The stream ends with `data: [DONE]`, or after an error chunk in OpenAI's error shape.
 */
export function chatChunks({ operationId, model, created, includeUsage }: ChunkStream): StreamFormat {
  let first = true;
  const chunk = (choices: unknown[], usage?: unknown) =>
    data({
      id: chatId(operationId),
      object: 'chat.completion.chunk',
      created,
      model,
      system_fingerprint: null,
      choices,
      ...(includeUsage ? { usage: usage ?? null } : {}),
    });
  return {
    delta(text) {
      const delta = first ? { role: 'assistant', content: text } : { content: text };
      first = false;
      return chunk([{ index: 0, delta, logprobs: null, finish_reason: null }]);
    },
    completed(r) {
      const annotations = urlCitations(r.citations);
      const end = chunk([
        {
          index: 0,
          delta: first
            ? { role: 'assistant', content: '', ...(annotations.length ? { annotations } : {}) }
            : annotations.length
              ? { annotations }
              : {},
          logprobs: null,
          finish_reason: 'stop',
        },
      ]);
      return `${end}${includeUsage ? chunk([], usageOf(r)) : ''}data: [DONE]\n\n`;
    },
    failed: (e) => data(openaiErrorBody(e)),
  };
}

/** OpenAI's error body of anything a stream ended with. */
export function openaiErrorBody(e: unknown): unknown {
  if (e instanceof DomainError) return errorReply(e, 'openai', '').json;
  const cancelled = e instanceof CallCancelledError;
  return {
    error: {
      message: cancelled ? 'The completion was cancelled' : 'An unexpected error occurred',
      type: cancelled ? 'invalid_request_error' : 'server_error',
      param: null,
      code: cancelled ? 'cancelled' : null,
    },
  };
}
