// The standalone host: serves a route table on node:http, mapping Node requests to the platform shape
// directly (no undici Request objects), for `npm start` and for self-hosting on a VM or container.
import http from 'node:http';
import type { Services } from '../services.js';
import { errorReply } from './envelopes.js';
import { ApiError, notFound, payloadTooLarge } from './errors.js';
import { handle, requestIdOf } from './pipeline.js';
import type { Route } from './route.js';
import { createRouter } from './router.js';
import type { Api, PlatformRequest, Reply } from './types.js';

/** An HTTP server for one API's routes. Call `listen` on it. */
export function createApiServer(api: Api, routes: readonly Route[], services: Services): http.Server {
  const match = createRouter(routes.filter((r) => r.api === api));
  const style = api === 'core' ? 'core' : 'management';
  const server = http.createServer((req, res) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const request = toPlatformRequest(req, q < 0 ? url : url.slice(0, q), q < 0 ? '' : url.slice(q + 1));
    const found = match(req.method ?? 'GET', request.path);
    let reply: Promise<Reply>;
    if (found.kind === 'found') {
      reply = handle(found.route, request, found.params, services);
    } else {
      const error =
        found.kind === 'not-found'
          ? notFound(`No route for ${request.path}`)
          : new ApiError(405, 'MethodNotAllowed', `Method ${req.method ?? ''} not allowed`, [], { allow: found.allow.join(', ') });
      const r = errorReply(error, style, request.path);
      reply = Promise.resolve({ ...r, headers: { ...r.headers, 'x-request-id': requestIdOf(request) } });
    }
    reply.then(
      (r) => send(res, r),
      () => send(res, { status: 500, json: { error: { code: 'InternalError', message: 'An unexpected error occurred' } } }),
    );
  });
  server.keepAliveTimeout = 65_000;
  return server;
}

function toPlatformRequest(req: http.IncomingMessage, path: string, search: string): PlatformRequest {
  let body: Promise<Buffer> | undefined;
  return {
    method: req.method ?? 'GET',
    path,
    query: new URLSearchParams(search),
    header(name) {
      const v = req.headers[name];
      return Array.isArray(v) ? v.join(', ') : v;
    },
    body(limit) {
      body ??= readBody(req, limit);
      return body;
    },
    stream: () => req,
  };
}

function readBody(req: http.IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (declared > limit) {
      req.resume();
      reject(payloadTooLarge(`Request body exceeds ${limit} bytes`));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.removeAllListeners('data');
        req.resume();
        reject(payloadTooLarge(`Request body exceeds ${limit} bytes`));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function send(res: http.ServerResponse, reply: Reply): void {
  const headers: Record<string, string | number> = { ...reply.headers };
  let payload: Buffer | undefined;
  if (reply.raw !== undefined) {
    payload = typeof reply.raw === 'string' ? Buffer.from(reply.raw) : Buffer.from(reply.raw);
  } else if (reply.json !== undefined) {
    payload = Buffer.from(JSON.stringify(reply.json));
    headers['content-type'] ??= 'application/json; charset=utf-8';
  }
  headers['content-length'] = payload?.length ?? 0;
  res.writeHead(reply.status, headers);
  res.end(payload);
}
