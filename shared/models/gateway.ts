// Calls model endpoints over keep-alive HTTP (undici), treating the upstream as hostile: every call lives
// inside the endpoint's time budget (retries and upstream-requested waits included), answers are read up to
// a size limit and checked before use, connections pass the outbound rules, and every failure becomes a
// 502, 503 or 504 with a message that reveals nothing about the network behind it.
import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { errors, request, type Dispatcher } from 'undici';
import { ApiError } from '../http/errors.js';
import type { ModelCredentials } from './credentials.js';
import type { EndpointView } from './endpoint.js';
import { chatUrl, readChatCompletion, type ChatMessage, type ModelAnswer, type ModelParameters } from './wire.js';

const tracer = trace.getTracer('agent-platform');

/**
 * An upstream failure: what the client is told, whether another try within the call could help
 * (`retryable`), and whether no later try could (`permanent`: the same request gets the same answer).
 */
export class UpstreamError extends ApiError {
  constructor(
    status: number,
    code: string,
    message: string,
    readonly retryable: boolean,
    readonly retryAfterMs?: number,
    readonly permanent = false,
  ) {
    super(status, code, message, [], retryAfterMs !== undefined ? { 'retry-after': String(Math.min(3600, Math.max(1, Math.ceil(retryAfterMs / 1000)))) } : {});
  }
}

/** The caller gave up (a cancelled operation, a client that went away, shutdown). */
export class CallCancelledError extends Error {
  override name = 'CallCancelledError';
}

const unreachable = () => new UpstreamError(502, 'UpstreamUnavailable', 'The model endpoint could not be reached', true);
const timedOut = (seconds: number) => new UpstreamError(504, 'UpstreamTimeout', `The model did not answer within ${seconds} s`, false);
const tooLarge = (limit: number) => new UpstreamError(502, 'UpstreamResponseTooLarge', `The model's answer is larger than ${limit} bytes`, false, undefined, true);
const invalid = (why: string) => new UpstreamError(502, 'UpstreamInvalidResponse', `The model endpoint gave an invalid answer: ${why}`, true);

function statusError(status: number, retryAfterMs: number | undefined): UpstreamError {
  if (status === 429) return new UpstreamError(503, 'UpstreamRateLimited', 'The model is rate limited; try again later', true, retryAfterMs);
  if (status >= 500 || status === 408) return new UpstreamError(502, 'UpstreamError', `The model endpoint failed (${status})`, true, retryAfterMs);
  // Other 4xx answers are deterministic: the same request would be refused again.
  return new UpstreamError(502, 'UpstreamRejected', `The model endpoint rejected the request (${status})`, false, undefined, true);
}

/** Retry-After in milliseconds (delta-seconds or an HTTP date), or undefined. */
export function retryAfterMs(header: string | string[] | undefined, now = Date.now()): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined || value.trim() === '') return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

const sleep = (ms: number, signal: AbortSignal | undefined) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(done, ms);
    function done() {
      signal?.removeEventListener('abort', abort);
      resolve();
    }
    function abort() {
      clearTimeout(timer);
      reject(new CallCancelledError('The call was cancelled'));
    }
    signal?.addEventListener('abort', abort, { once: true });
  });

/** Reads a response body up to `limit` bytes; more is refused without reading it. */
async function readCapped(body: Dispatcher.ResponseData['body'], declared: string | string[] | undefined, limit: number): Promise<Buffer> {
  if (Number(declared) > limit) {
    body.destroy();
    throw tooLarge(limit);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) {
      body.destroy();
      throw tooLarge(limit);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}

export interface GatewayOptions {
  maxRetries: number;
  maxResponseBytes: number;
  credentials: ModelCredentials;
  /** The connection pool; its connections must pass the model outbound rules. */
  dispatcher: Dispatcher;
}

export class ModelGateway {
  constructor(private readonly options: GatewayOptions) {}

  /** One chat completion, as a client span; trace context and baggage travel to the model in headers. */
  complete(endpoint: EndpointView, deployment: string, messages: readonly ChatMessage[], parameters: ModelParameters, signal?: AbortSignal): Promise<ModelAnswer> {
    const attributes = { 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': deployment };
    return tracer.startActiveSpan(`chat ${deployment}`, { kind: SpanKind.CLIENT, attributes }, async (span) => {
      try {
        const body = JSON.stringify({ model: deployment, messages, ...parameters });
        const answer = await this.post(endpoint, chatUrl(endpoint, deployment), body, signal, readChatCompletion);
        span.setAttributes({ 'gen_ai.usage.input_tokens': answer.promptTokens, 'gen_ai.usage.output_tokens': answer.completionTokens });
        return answer;
      } catch (e) {
        span.setStatus({ code: SpanStatusCode.ERROR, message: e instanceof Error ? e.message : String(e) });
        throw e;
      } finally {
        span.end();
      }
    });
  }

  /** POSTs JSON and checks the answer with `read`, retrying transient failures inside the time budget. */
  private async post<T>(e: EndpointView, url: string, body: string, signal: AbortSignal | undefined, read: (json: unknown) => T | string): Promise<T> {
    const deadline = Date.now() + e.timeoutMs;
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json', ...(await this.options.credentials.headers(e)) };
    propagation.inject(context.active(), headers);
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.attempt(e, url, headers, body, deadline, signal, read);
      } catch (thrown) {
        if (!(thrown instanceof UpstreamError) || !thrown.retryable || attempt >= this.options.maxRetries) throw thrown;
        // Exponential backoff with jitter, or what the upstream asked for: never past the deadline.
        const wait = thrown.retryAfterMs ?? Math.min(4000, 250 * 2 ** attempt) * (0.5 + Math.random() / 2);
        if (Date.now() + wait >= deadline) throw thrown;
        await sleep(wait, signal);
      }
    }
  }

  private async attempt<T>(e: EndpointView, url: string, headers: Record<string, string>, body: string, deadline: number, signal: AbortSignal | undefined, read: (json: unknown) => T | string): Promise<T> {
    const left = deadline - Date.now();
    const timeout = AbortSignal.timeout(Math.max(1, left));
    const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
    const failed = (error: unknown): Error => {
      if (error instanceof UpstreamError) return error;
      if (signal?.aborted) return new CallCancelledError('The call was cancelled');
      if (timeout.aborted || error instanceof errors.HeadersTimeoutError || error instanceof errors.BodyTimeoutError) return timedOut(Math.round(e.timeoutMs / 1000));
      return unreachable();
    };
    let response: Dispatcher.ResponseData;
    try {
      response = await request(url, { method: 'POST', headers, body, dispatcher: this.options.dispatcher, signal: combined, headersTimeout: left, bodyTimeout: left });
    } catch (error) {
      throw failed(error);
    }
    let bytes: Buffer;
    try {
      bytes = await readCapped(response.body, response.headers['content-length'], response.statusCode >= 400 ? 64 * 1024 : this.options.maxResponseBytes);
    } catch (error) {
      if (response.statusCode >= 400 && error instanceof UpstreamError && error.code === 'UpstreamResponseTooLarge') throw statusError(response.statusCode, undefined);
      throw failed(error);
    }
    if (response.statusCode >= 400) throw statusError(response.statusCode, retryAfterMs(response.headers['retry-after']));
    if (response.statusCode !== 200) throw invalid(`unexpected status ${response.statusCode}`);
    let json: unknown;
    try {
      json = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
    } catch {
      throw invalid('the body is not JSON');
    }
    const answer = read(json);
    if (typeof answer === 'string') throw invalid(answer);
    return answer;
  }
}
