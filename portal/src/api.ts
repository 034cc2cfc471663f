// The public APIs as the portals call them: the signed-in user's bearer token on every call, the error
// envelopes of both APIs read into one error type, and pages followed through x-continuation-token.
import type { components, paths } from './api-types/core';
import { EventSourceParserStream } from 'eventsource-parser/stream';

export interface PortalConfig {
  /** Empty: the Core API is this page's own origin. */
  core_url: string;
  management_url: string;
  instance_id: string;
  sign_in: { kind: 'local' | 'none'; development_sign_in?: boolean } | { kind: 'entra'; client_id: string; authority: string; scope: string };
}

export interface FieldError {
  field: string;
  message: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly details: readonly FieldError[] = [],
    readonly code?: string,
  ) {
    super(message);
  }
}

export async function loadPortalConfig(): Promise<PortalConfig> {
  const r = await fetch('/portal/config.json');
  if (!r.ok) throw new ApiError(r.status, 'The portal settings could not be loaded');
  return (await r.json()) as PortalConfig;
}

/** The message of any of the service's error bodies (Core and Management envelopes, problem details). */
async function errorOf(r: Response): Promise<ApiError> {
  const body = (await r.json().catch(() => undefined)) as { error?: { message?: string; details?: FieldError[] }; detail?: string; message?: string } | undefined;
  const message = body?.error?.message ?? body?.detail ?? body?.message ?? `${r.status} ${r.statusText}`;
  return new ApiError(r.status, message, body?.error?.details ?? [], (body?.error as { code?: string } | undefined)?.code);
}

export type Api = ReturnType<typeof createApi>;

export function createApi(config: PortalConfig, token: () => Promise<string>, onUnauthorized: () => void) {
  const instance = `/instances/${config.instance_id}`;
  const base = { core: `${config.core_url}${instance}`, management: `${config.management_url}${instance}` };

  async function call(api: keyof typeof base, path: string, init: RequestInit & { json?: unknown } = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    headers.set('authorization', `Bearer ${await token()}`);
    let body = init.body;
    if (init.json !== undefined) {
      headers.set('content-type', 'application/json');
      body = JSON.stringify(init.json);
    }
    const r = await fetch(`${base[api]}${path}`, { ...init, headers, body: body ?? null });
    if (r.status === 401) onUnauthorized();
    if (!r.ok) throw await errorOf(r);
    return r;
  }

  const json = async <T>(api: keyof typeof base, path: string, init?: RequestInit & { json?: unknown }): Promise<T> => {
    const r = await call(api, path, init);
    const text = await r.text();
    return (text ? JSON.parse(text) : undefined) as T;
  };

  /** One page of a list; `next` is the continuation for the following page, if any. */
  async function page<T>(api: keyof typeof base, path: string, continuation?: string, top = 20): Promise<{ items: T[]; next: string | undefined }> {
    const q = new URLSearchParams({ top: String(top) });
    if (continuation) q.set('continuationToken', continuation);
    const r = await call(api, `${path}${path.includes('?') ? '&' : '?'}${q}`);
    return { items: (await r.json()) as T[], next: r.headers.get('x-continuation-token') ?? undefined };
  }

  /** Every page of a list. */
  async function all<T>(api: keyof typeof base, path: string): Promise<T[]> {
    const items: T[] = [];
    let next: string | undefined;
    do {
      const p = await page<T>(api, path, next, 100);
      items.push(...p.items);
      next = p.next;
    } while (next);
    return items;
  }

  /**
   * A streamed completion, run in the background on the service: `onStart` with its operation id, `onDelta`
   * with each piece, resolving with the completion response of the `completed` event. When the connection
   * drops before the end, it resumes from the last event received (Last-Event-ID), so no text repeats. Fails
   * before the stream (auth, quota) answer as JSON errors; a cancelled answer throws code `Cancelled`.
   */
  async function stream(request: CompletionRequest, on: { delta: (text: string) => void; start?: (operationId: string) => void }, signal?: AbortSignal): Promise<CompletionResponse> {
    const first = await call('core', '/completions', { method: 'POST', json: { ...request, background: true }, headers: { accept: 'text/event-stream' }, ...(signal ? { signal } : {}) });
    if (!(first.headers.get('content-type') ?? '').startsWith('text/event-stream')) return (await first.json()) as CompletionResponse;
    const operationId = first.headers.get('x-operation-id') ?? '';
    on.start?.(operationId);
    let last = 0;
    let body = first.body;
    for (let attempt = 1; ; attempt++) {
      try {
        if (!body) throw new ApiError(502, 'The answer has no body');
        const events = body.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream());
        for await (const e of events as unknown as AsyncIterable<{ id?: string; event?: string; data: string }>) {
          const id = Number(e.id ?? '0');
          if (id !== 0 && id <= last) continue;
          last = id || last;
          const data = JSON.parse(e.data) as { text?: string; error?: { code?: string; message: string } } & CompletionResponse;
          if (e.event === 'delta') on.delta(data.text ?? '');
          else if (e.event === 'completed') return data;
          else if (e.event === 'error') throw new ApiError(502, data.error?.message ?? 'The completion failed', [], data.error?.code);
        }
      } catch (e) {
        if (e instanceof ApiError || signal?.aborted) throw e;
      }
      // The connection dropped before the end: the service kept the answer going; read on from `last`.
      if (!operationId || attempt > 5) throw new ApiError(502, 'The answer ended before it was complete');
      await new Promise((r) => setTimeout(r, 300 * attempt));
      body = (await call('core', `/completions/${encodeURIComponent(operationId)}/stream`, { headers: { 'last-event-id': String(last) }, ...(signal ? { signal } : {}) })).body;
    }
  }

  return { call, json, page, all, stream };
}

// The API's own types, generated from its OpenAPI documents (scripts/portal-api-types.ts).
type Schemas = components['schemas'];
type CoreBody<P extends keyof paths> = paths[P] extends { post: { requestBody?: { content: { 'application/json': infer B } } } } ? B : never;

export type CompletionRequest = CoreBody<'/instances/{instanceId}/completions'>;
export type Citation = Schemas['Citation'];
export type CompletionResponse = Schemas['CompletionResponse'];
export type Session = Schemas['Session'];
export type Message = Schemas['Message'];
export type CompletionPrompt = Schemas['CompletionPrompt'];
export type ToolExecutionArtifact = Schemas['ToolExecutionArtifact'];
export type FileArtifact = Schemas['FileArtifact'];
export type AgentItem = Schemas['AgentListItem'];

export interface Branding {
  company_name?: string;
  page_title?: string;
  logo_url?: string;
  primary_color?: string;
  primary_text_color?: string;
}
