// Calls language models through the official `openai` client: any OpenAI-compatible base URL, or Azure
// OpenAI with an API key or a managed identity. Timeouts and bounded retries (honouring the upstream's
// Retry-After) come from the client; failures become 502, 503 or 504 in the Core error envelope.
import { DefaultAzureCredential, getBearerTokenProvider } from '@azure/identity';
import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import OpenAI, { AzureOpenAI } from 'openai';
import { readSecret } from '../config.js';
import { ApiError } from '../http/errors.js';
import type { ResourceDoc } from '../providers/resource-type.js';

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface ModelParameters {
  temperature?: number;
  max_tokens?: number;
  top_p?: number;
}

export interface ModelAnswer {
  content: string;
  promptTokens: number;
  completionTokens: number;
}

/** The stored API endpoint configuration fields the gateway uses (CONTRACT.md section 6). */
interface Endpoint {
  object_id: string;
  updated_on: string;
  provider: 'openai' | 'azure-openai';
  url: string;
  api_version?: string;
  authentication_type: 'None' | 'APIKey' | 'AzureIdentity';
  authentication_parameters?: { api_key_secret_name?: string; scope?: string };
  timeout_seconds?: number;
}

const tracer = trace.getTracer('agent-platform');

const upstream = (status: number, code: string, message: string, headers: Record<string, string> = {}) =>
  new ApiError(status, code, message, [], headers);

export class ModelGateway {
  private readonly clients = new Map<string, { version: string; client: OpenAI }>();
  private credential: DefaultAzureCredential | undefined;

  constructor(
    private readonly options: { maxRetries: number; clientId?: string | undefined; secret?: (name: string) => string | undefined } = { maxRetries: 2 },
  ) {}

  private client(endpointDoc: ResourceDoc, deployment: string): OpenAI {
    const e = endpointDoc as unknown as Endpoint;
    const key = `${e.object_id}|${deployment}`;
    const cached = this.clients.get(key);
    if (cached && cached.version === e.updated_on) return cached.client;
    const timeout = (e.timeout_seconds ?? 60) * 1000;
    const common = { timeout, maxRetries: this.options.maxRetries };
    let apiKey: string | undefined;
    if (e.authentication_type === 'APIKey') {
      const name = e.authentication_parameters?.api_key_secret_name ?? '';
      apiKey = (this.options.secret ?? readSecret)(name);
      if (!apiKey) throw upstream(502, 'UpstreamConfiguration', `The API key of the model endpoint (secret ${name}) is not configured`);
    }
    const tokenProvider = () => {
      this.credential ??= new DefaultAzureCredential(this.options.clientId ? { managedIdentityClientId: this.options.clientId } : {});
      return getBearerTokenProvider(this.credential, e.authentication_parameters?.scope ?? 'https://cognitiveservices.azure.com/.default');
    };
    let client: OpenAI;
    if (e.provider === 'azure-openai') {
      client = new AzureOpenAI({
        ...common,
        endpoint: e.url,
        deployment,
        apiVersion: e.api_version ?? '2024-10-21',
        ...(e.authentication_type === 'AzureIdentity' ? { azureADTokenProvider: tokenProvider() } : { apiKey: apiKey ?? 'none' }),
      });
    } else {
      const provider = e.authentication_type === 'AzureIdentity' ? tokenProvider() : undefined;
      client = new OpenAI({ ...common, baseURL: e.url, apiKey: provider ?? apiKey ?? 'none' });
    }
    if (this.clients.size > 1000) this.clients.clear();
    this.clients.set(key, { version: e.updated_on, client });
    return client;
  }

  /** One chat completion, as a client span; trace context and baggage travel to the model in headers. */
  complete(endpoint: ResourceDoc, model: ResourceDoc, messages: ChatMessage[], parameters: ModelParameters): Promise<ModelAnswer> {
    const deployment = String(model.deployment_name);
    return tracer.startActiveSpan(`chat ${deployment}`, { kind: SpanKind.CLIENT, attributes: { 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': deployment } }, async (span) => {
      const headers: Record<string, string> = {};
      propagation.inject(context.active(), headers);
      try {
        const answer = await this.call(endpoint, model, messages, parameters, headers);
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

  private async call(endpoint: ResourceDoc, model: ResourceDoc, messages: ChatMessage[], parameters: ModelParameters, headers: Record<string, string>): Promise<ModelAnswer> {
    const deployment = String(model.deployment_name);
    const timeoutSeconds = (endpoint as { timeout_seconds?: number }).timeout_seconds ?? 60;
    try {
      const response = await this.client(endpoint, deployment).chat.completions.create({ model: deployment, messages, ...parameters }, { headers });
      const content = response.choices[0]?.message.content;
      if (typeof content !== 'string') throw upstream(502, 'UpstreamError', 'The model answered without content');
      return { content, promptTokens: response.usage?.prompt_tokens ?? 0, completionTokens: response.usage?.completion_tokens ?? 0 };
    } catch (e) {
      if (e instanceof ApiError) throw e;
      if (e instanceof OpenAI.APIConnectionTimeoutError) throw upstream(504, 'UpstreamTimeout', `The model did not answer within ${timeoutSeconds} s`);
      if (e instanceof OpenAI.APIConnectionError) throw upstream(502, 'UpstreamUnavailable', 'The model endpoint could not be reached');
      if (e instanceof OpenAI.APIError && e.status !== undefined) {
        if (e.status === 429) {
          const retryAfter = (e.headers as Headers | undefined)?.get('retry-after');
          throw upstream(503, 'UpstreamRateLimited', 'The model is rate limited; try again later', retryAfter ? { 'retry-after': retryAfter } : {});
        }
        if (e.status >= 500) throw upstream(502, 'UpstreamError', `The model endpoint failed (${e.status})`);
        throw upstream(502, 'UpstreamRejected', `The model endpoint rejected the request (${e.status})`);
      }
      throw e;
    }
  }
}
