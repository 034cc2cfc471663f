// Calls model endpoints over keep-alive HTTP (undici), treating the upstream as hostile: every call lives
// inside the endpoint's time budget (retries and upstream-requested waits included), answers are read up to
// a size limit and checked before use, connections pass the outbound rules, and every failure becomes a
// 502, 503 or 504 with a message that reveals nothing about the network behind it. Answers come whole, or
// streamed (server-sent events) delta by delta.
import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { errors, request, type Dispatcher } from '../net/undici.js';
import { ConnectionGate } from './connection-gate.js';
import type { ModelCredentials } from './credentials.js';
import type { EndpointView } from './endpoint.js';
import { recordModelCall } from '../telemetry/metrics.js';
import { readSse } from './sse.js';
import {
  CallCancelledError,
  invalid,
  statusError,
  timedOut,
  tooLarge,
  unreachable,
  UpstreamError,
  retryAfterMs,
} from './upstream-errors.js';
import {
  chatUrl,
  embeddingsUrl,
  readChatCompletion,
  readEmbeddings,
  type ChatMessage,
  type Embeddings,
  type ModelAnswer,
  type ModelParameters,
} from './wire.js';

export { CallCancelledError, UpstreamError } from './upstream-errors.js';

const tracer = trace.getTracer('agent-platform');

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

type Body = Dispatcher.ResponseData['body'];

/** Reads a response body up to `limit` bytes; more is refused without reading it. */
async function readCapped(body: Body, declared: string | string[] | undefined, limit: number): Promise<Buffer> {
  if (Number(declared) > limit) {
    body.destroy();
    throw tooLarge(limit);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    // undici yields Buffers: the body has no encoding set.
    const bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
    size += bytes.length;
    if (size > limit) {
      body.destroy();
      throw tooLarge(limit);
    }
    chunks.push(bytes);
  }
  return Buffer.concat(chunks, size);
}

const decode = (bytes: Buffer): unknown => {
  try {
    return JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    throw invalid('the body is not JSON');
  }
};

export interface GatewayOptions {
  maxRetries: number;
  maxResponseBytes: number;
  credentials: ModelCredentials;
  /** Connections of endpoints saved to reach loopback and private networks (by an Owner): the model rules. */
  dispatcher: Dispatcher;
  /**
   * Connections of every other endpoint: public addresses only (unless ALLOW_PRIVATE_NETWORK), checked at
   * connect. Neither pool limits connections per origin: the connection gate limits them per endpoint.
   */
  publicDispatcher: Dispatcher;
}

/** One attempt's view of its time: the deadline of the first answer byte, cancellable once the stream flows. */
interface Attempt {
  signal: AbortSignal;
  /** Called when the answer has begun: from then on only the idle timeout between chunks applies. */
  started(): void;
  timedOut(): boolean;
}

/**
 * What a model call is for: the caller's signal, and who calls (an agent), whose fair share of the endpoint's
 * connections it takes.
 */
export interface ModelCall {
  signal?: AbortSignal | undefined;
  caller?: string | undefined;
}

/** A chat completion to ask of a deployment of an endpoint. */
export interface ChatRequest {
  endpoint: EndpointView;
  deployment: string;
  messages: readonly ChatMessage[];
  parameters: ModelParameters;
}

/** Embeddings to ask of a deployment; `dimensions` asks models that can shorten their vectors for that length. */
export interface EmbeddingsRequest {
  endpoint: EndpointView;
  deployment: string;
  inputs: readonly string[];
  dimensions?: number | undefined;
}

/** A JSON POST to a URL of an endpoint. */
export interface JsonRequest {
  endpoint: EndpointView;
  url: string;
  payload: unknown;
}

/** One attempt's request: the body already serialized, the headers already signed, the call's deadline. */
interface AttemptRequest {
  endpoint: EndpointView;
  url: string;
  headers: Record<string, string>;
  body: string;
  deadline: number;
}

type ReadAnswer<T> = (response: Dispatcher.ResponseData, attempt: Attempt) => Promise<T>;

export class ModelGateway {
  /** Each endpoint's open calls (its max_connections), shared fairly among callers. */
  readonly connections = new ConnectionGate();

  constructor(private readonly options: GatewayOptions) {}

  /** One chat completion, whole. */
  complete({ endpoint, deployment, messages, parameters }: ChatRequest, call: ModelCall = {}): Promise<ModelAnswer> {
    return this.traced(deployment, 'chat', () =>
      this.post(
        { endpoint, url: chatUrl(endpoint, deployment), payload: { model: deployment, messages, ...parameters } },
        call,
        async (response) => {
          const answer = readChatCompletion(
            decode(await readCapped(response.body, response.headers['content-length'], this.options.maxResponseBytes)),
          );
          if (typeof answer === 'string') throw invalid(answer);
          return answer;
        },
      ),
    );
  }

  /**
   * One chat completion, streamed: `onDelta` gets each piece of text as the model produces it; the whole
   * answer (with its usage) resolves at the end. Retried only until the first piece arrived.
   */
  stream(
    { endpoint, deployment, messages, parameters }: ChatRequest,
    onDelta: (text: string) => void,
    call: ModelCall = {},
  ): Promise<ModelAnswer> {
    const payload = {
      model: deployment,
      messages,
      ...parameters,
      stream: true,
      stream_options: { include_usage: true },
    };
    return this.traced(deployment, 'chat', () =>
      this.post({ endpoint, url: chatUrl(endpoint, deployment), payload }, call, async (response, attempt) => {
        const type = String(response.headers['content-type'] ?? '');
        // A server that ignores `stream` answers whole: one delta.
        if (!type.includes('text/event-stream')) {
          const answer = readChatCompletion(
            decode(await readCapped(response.body, response.headers['content-length'], this.options.maxResponseBytes)),
          );
          if (typeof answer === 'string') throw invalid(answer);
          attempt.started();
          onDelta(answer.content);
          return answer;
        }
        return readSse(response.body, this.options.maxResponseBytes, (text) => {
          attempt.started();
          onDelta(text);
        });
      }),
    );
  }

  /**
   * Embeddings of `inputs` (the OpenAI embeddings API; Azure OpenAI too), in their order. `dimensions` asks
   * models that can shorten their vectors (text-embedding-3) for that length.
   */
  embed({ endpoint, deployment, inputs, dimensions }: EmbeddingsRequest, call: ModelCall = {}): Promise<Embeddings> {
    const payload = { model: deployment, input: inputs, ...(dimensions !== undefined ? { dimensions } : {}) };
    return this.traced(deployment, 'embeddings', () =>
      this.post({ endpoint, url: embeddingsUrl(endpoint, deployment), payload }, call, async (response) => {
        const answer = readEmbeddings(
          decode(await readCapped(response.body, response.headers['content-length'], this.options.maxResponseBytes)),
          inputs.length,
        );
        if (typeof answer === 'string') throw invalid(answer);
        if (dimensions !== undefined && answer.vectors[0]?.length !== dimensions)
          throw invalid(`the embeddings have ${answer.vectors[0]?.length} dimensions, not ${dimensions}`);
        return answer;
      }),
    );
  }

  /**
   * A JSON POST to another API of an endpoint (Azure AI Content Safety), with the same authentication,
   * deadline, retries and size cap as model calls; the answer is the decoded body, not yet checked.
   */
  postJson(request: JsonRequest, call: ModelCall = {}): Promise<unknown> {
    return this.post(request, call, async (response) =>
      decode(await readCapped(response.body, response.headers['content-length'], this.options.maxResponseBytes)),
    );
  }

  /** A client span around a call; trace context and baggage travel to the model in headers. */
  private traced<T extends { promptTokens: number; completionTokens?: number }>(
    deployment: string,
    operation: 'chat' | 'embeddings',
    call: () => Promise<T>,
  ): Promise<T> {
    const attributes = { 'gen_ai.operation.name': operation, 'gen_ai.request.model': deployment };
    return tracer.startActiveSpan(`${operation} ${deployment}`, { kind: SpanKind.CLIENT, attributes }, async (span) => {
      const started = performance.now();
      try {
        const answer = await call();
        const tokens = { input: answer.promptTokens, output: answer.completionTokens ?? 0 };
        span.setAttributes({ 'gen_ai.usage.input_tokens': tokens.input, 'gen_ai.usage.output_tokens': tokens.output });
        recordModelCall((performance.now() - started) / 1000, { operation, model: deployment }, tokens);
        return answer;
      } catch (e) {
        span.setStatus({ code: SpanStatusCode.ERROR, message: e instanceof Error ? e.message : String(e) });
        recordModelCall((performance.now() - started) / 1000, {
          operation,
          model: deployment,
          error: e instanceof UpstreamError ? e.code : e instanceof Error ? e.name : 'Error',
        });
        throw e;
      } finally {
        span.end();
      }
    });
  }

  /** POSTs JSON and reads the answer with `read`, retrying transient failures inside the time budget. */
  private async post<T>(
    { endpoint, url, payload }: JsonRequest,
    { signal, caller = '' }: ModelCall,
    read: ReadAnswer<T>,
  ): Promise<T> {
    const deadline = Date.now() + endpoint.timeoutMs;
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      ...(await this.options.credentials.headers(endpoint)),
    };
    propagation.inject(context.active(), headers);
    const body = JSON.stringify(payload);
    for (let attempt = 0; ; attempt++) {
      const progress = { started: false };
      try {
        return await this.attempt({ endpoint, url, headers, body, deadline }, { signal, caller }, (response, a) =>
          read(response, {
            ...a,
            started: () => {
              progress.started = true;
              a.started();
            },
          }),
        );
      } catch (thrown) {
        // Once an answer began, another try would repeat what the caller already has.
        if (
          progress.started ||
          !(thrown instanceof UpstreamError) ||
          !thrown.retryable ||
          attempt >= this.options.maxRetries
        )
          throw thrown;
        // Exponential backoff with jitter, or what the upstream asked for: never past the deadline.
        const wait = thrown.retryAfterMs ?? Math.min(4000, 250 * 2 ** attempt) * (0.5 + Math.random() / 2);
        if (Date.now() + wait >= deadline) throw thrown;
        await sleep(wait, signal);
      }
    }
  }

  private async attempt<T>(
    { endpoint: e, url, headers, body, deadline }: AttemptRequest,
    { signal, caller = '' }: ModelCall,
    read: ReadAnswer<T>,
  ): Promise<T> {
    // A connection of the endpoint first: waiting for one counts against the deadline (503 ConnectionLimit when none
    // frees in time).
    const release = await Promise.resolve(this.connections.acquire(e, { tenant: caller, deadline, signal })).catch(
      (error: unknown) => {
        throw signal?.aborted ? new CallCancelledError('The call was cancelled') : error;
      },
    );
    const left = Math.max(1, deadline - Date.now());
    const controller = new AbortController();
    let expired = false;
    // The deadline covers the answer's beginning (the whole answer when it is not streamed).
    const timer = setTimeout(() => {
      expired = true;
      controller.abort();
    }, left);
    const cancel = () => controller.abort();
    signal?.addEventListener('abort', cancel, { once: true });
    const attempt: Attempt = { signal: controller.signal, started: () => clearTimeout(timer), timedOut: () => expired };
    const failed = (error: unknown): Error => {
      if (error instanceof UpstreamError) return error;
      if (signal?.aborted) return new CallCancelledError('The call was cancelled');
      if (expired || error instanceof errors.HeadersTimeoutError || error instanceof errors.BodyTimeoutError)
        return timedOut(Math.round(e.timeoutMs / 1000));
      return unreachable();
    };
    try {
      let response: Dispatcher.ResponseData;
      try {
        response = await request(url, {
          method: 'POST',
          headers,
          body,
          dispatcher: e.privateNetwork ? this.options.dispatcher : this.options.publicDispatcher,
          signal: controller.signal,
          headersTimeout: left,
          bodyTimeout: e.timeoutMs,
        });
      } catch (error) {
        throw failed(error);
      }
      if (response.statusCode >= 400) {
        // An error answer is read (a little) only to free the connection; its text is never passed on.
        await readCapped(response.body, undefined, 64 * 1024).catch(() => undefined);
        throw statusError(response.statusCode, retryAfterMs(response.headers['retry-after']));
      }
      if (response.statusCode !== 200) {
        response.body.destroy();
        throw invalid(`unexpected status ${response.statusCode}`);
      }
      try {
        return await read(response, attempt);
      } catch (error) {
        response.body.destroy();
        throw failed(error);
      }
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', cancel);
      release();
    }
  }
}
