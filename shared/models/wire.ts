// The OpenAI Chat Completions wire format (which Azure OpenAI and every OpenAI-compatible server speak):
// request URLs and the checked reading of answers. An answer is upstream input: nothing is trusted until
// it has been checked here.
import type { EndpointView } from './endpoint.js';

/** A function the model asked to call, with its arguments as the JSON text the model wrote. */
export interface ToolCall {
  id: string;
  name: string;
  arguments: string;
}

/** A part of a user message's content: text, or an image (a data URL) for models that read images. */
export type ContentPart = { type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } };

export type ChatMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string | ContentPart[] }
  | {
      role: 'assistant';
      content: string;
      tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[];
    }
  | { role: 'tool'; tool_call_id: string; content: string };

/** A function offered to the model (OpenAI `tools`; Azure OpenAI alike). */
export interface ToolDefinition {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

/** Tool calls one answer may ask for: more is refused as an invalid answer. */
export const MAX_TOOL_CALLS = 16;

/**
 * Request fields of one call beyond the messages, in their wire names: sampling parameters (the completion request
 * names mapped), the provider-specific fields configured on the AI model, and its pass-through fields.
 */
export interface ModelParameters {
  temperature?: number;
  max_tokens?: number;
  top_p?: number;
  [field: string]: unknown;
}

export interface ModelAnswer {
  content: string;
  promptTokens: number;
  completionTokens: number;
  /** The model said nothing of its usage (its counts are 0 here): the service counts the tokens itself. */
  usageUnreported?: true;
  /** The functions the model asked to call instead of answering (absent when it answered). */
  toolCalls?: ToolCall[];
}

/** An Azure OpenAI deployment's URL of an operation, with the endpoint's API version. */
const azureDeploymentUrl = (e: EndpointView, deployment: string, operation: string) =>
  `${e.url}/openai/deployments/${encodeURIComponent(deployment)}/${operation}` +
  `?api-version=${encodeURIComponent(e.apiVersion ?? '2024-10-21')}`;

/** The chat completions URL of a deployment on an endpoint. */
export function chatUrl(e: EndpointView, deployment: string): string {
  return e.provider === 'azure-openai'
    ? azureDeploymentUrl(e, deployment, 'chat/completions')
    : `${e.url}/chat/completions`;
}

const count = (v: unknown) => (typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : 0);
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isFiniteNumber = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x);

/** The answer of a chat completion response body, or why the body is not one. */
export function readChatCompletion(body: unknown): ModelAnswer | string {
  if (!isObject(body) || !Array.isArray(body.choices)) return 'the answer has no choices';
  const first: unknown = body.choices[0];
  if (!isObject(first) || !isObject(first.message)) return 'the answer has no message';
  const tokens = usageOf(body.usage);
  const calls = first.message.tool_calls;
  if (Array.isArray(calls) && calls.length > 0) {
    const toolCalls = readToolCalls(calls);
    if (typeof toolCalls === 'string') return toolCalls;
    return { content: typeof first.message.content === 'string' ? first.message.content : '', ...tokens, toolCalls };
  }
  const content = first.message.content;
  if (typeof content !== 'string') return 'the answer has no text content';
  return { content, ...tokens };
}

/** An answer's token counts, or zeros marked unreported when it has no usage. */
export function usageOf(usage: unknown): Pick<ModelAnswer, 'promptTokens' | 'completionTokens' | 'usageUnreported'> {
  if (!isObject(usage)) return { promptTokens: 0, completionTokens: 0, usageUnreported: true };
  return { promptTokens: count(usage.prompt_tokens), completionTokens: count(usage.completion_tokens) };
}

/** Tool calls as the model wrote them, checked: ids, function names and argument text. */
function readToolCalls(calls: unknown[]): ToolCall[] | string {
  if (calls.length > MAX_TOOL_CALLS)
    return `the answer asks for ${calls.length} tool calls (at most ${MAX_TOOL_CALLS})`;
  const read: ToolCall[] = [];
  for (const c of calls) {
    if (!isObject(c) || typeof c.id !== 'string' || c.id.length === 0 || c.id.length > 200 || !isObject(c.function))
      return 'a tool call has no id or function';
    const { name, arguments: args } = c.function;
    if (typeof name !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(name) || typeof args !== 'string')
      return 'a tool call has no valid function name or arguments';
    read.push({ id: c.id, name, arguments: args });
  }
  return read;
}

/** The embeddings URL of a deployment on an endpoint. */
export function embeddingsUrl(e: EndpointView, deployment: string): string {
  return e.provider === 'azure-openai' ? azureDeploymentUrl(e, deployment, 'embeddings') : `${e.url}/embeddings`;
}

export interface Embeddings {
  vectors: number[][];
  promptTokens: number;
  /** The model said nothing of its usage: the service counts the inputs' tokens itself. */
  usageUnreported?: true;
}

/**
 * The vectors of an embeddings response body, in the order of the inputs, or why the body is not one: every
 * input has exactly one vector of finite numbers, and all vectors have the same length.
 */
export function readEmbeddings(body: unknown, inputs: number): Embeddings | string {
  if (!isObject(body) || !Array.isArray(body.data)) return 'the answer has no data';
  if (body.data.length !== inputs) return `the answer has ${body.data.length} embeddings for ${inputs} inputs`;
  const vectors: number[][] = new Array<number[]>(inputs);
  const items: unknown[] = body.data;
  for (const item of items) {
    if (!isObject(item) || !Array.isArray(item.embedding)) return 'an embedding is missing';
    const index = typeof item.index === 'number' && Number.isInteger(item.index) ? item.index : -1;
    if (index < 0 || index >= inputs || vectors[index] !== undefined) return 'the embeddings are not indexed by input';
    const v: unknown[] = item.embedding;
    if (v.length === 0 || !v.every(isFiniteNumber)) return 'an embedding is not a list of numbers';
    vectors[index] = v;
  }
  const dims = vectors[0]?.length;
  if (vectors.some((v) => v.length !== dims)) return 'the embeddings differ in length';
  const { promptTokens, usageUnreported } = usageOf(body.usage);
  return { vectors, promptTokens, ...(usageUnreported ? { usageUnreported } : {}) };
}
