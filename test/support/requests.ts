// Calls routes through the real pipeline with an in-memory request.
import { Readable } from 'node:stream';
import { payloadTooLarge } from '../../shared/errors.js';
import { handle } from '../../shared/http/pipeline.js';
import type { Route } from '../../shared/http/route.js';
import { createRouter } from '../../shared/http/router.js';
import type { Api, PlatformRequest, Reply } from '../../shared/http/types.js';
import type { Services } from '../../shared/services.js';

export interface FakeRequest {
  /** Which API's routes to match, where both have the path (e.g. /status). */
  api?: Api;
  method?: string;
  path: string;
  headers?: Record<string, string>;
  body?: unknown;
}

export function platformRequest(r: FakeRequest): PlatformRequest {
  const [pathname = '/', search = ''] = r.path.split('?');
  const headers: Record<string, string> = Object.fromEntries(
    Object.entries(r.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]),
  );
  // A body given as a value is sent as JSON, as a client would.
  if (r.body !== undefined && !Buffer.isBuffer(r.body) && typeof r.body !== 'string')
    headers['content-type'] ??= 'application/json';
  const bytes =
    r.body === undefined
      ? Buffer.alloc(0)
      : Buffer.isBuffer(r.body)
        ? r.body
        : Buffer.from(typeof r.body === 'string' ? r.body : JSON.stringify(r.body));
  return {
    signal: new AbortController().signal,
    method: r.method ?? 'GET',
    path: pathname,
    query: new URLSearchParams(search),
    header: (name) => headers[name],
    body: (limit) => (bytes.length > limit ? Promise.reject(payloadTooLarge('too large')) : Promise.resolve(bytes)),
    stream: () => Readable.from([bytes]),
  };
}

/** Routes a fake request through the route table and the pipeline, as a host would. */
export async function call(routes: readonly Route[], services: Services, r: FakeRequest): Promise<Reply> {
  const request = platformRequest(r);
  const found = createRouter(routes.filter((route) => !r.api || route.api === r.api))(request.method, request.path);
  if (found.kind !== 'found') throw new Error(`No route for ${request.method} ${request.path} (${found.kind})`);
  return handle({ route: found.route, request, rawParams: found.params, services });
}
