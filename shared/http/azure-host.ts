// The Azure Functions host: registers every route as an HTTP function and every queue handler as a queue
// trigger (programming model v4). Same pipeline as the standalone host.
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import functions from '@azure/functions';
import type { Config } from '../config.js';
import type { QueueHandler } from '../queues/handler.js';
import type { Services } from '../services.js';
import { payloadTooLarge } from './errors.js';
import { handle } from './pipeline.js';
import type { Route } from './route.js';
import type { PlatformRequest, Reply } from './types.js';

type HttpRequest = functions.HttpRequest;
type HttpResponseInit = functions.HttpResponseInit;

/** Maps a Functions request to the platform shape. */
export function fromFunctionsRequest(req: HttpRequest): PlatformRequest {
  const url = new URL(req.url);
  let body: Promise<Buffer> | undefined;
  return {
    method: req.method,
    path: url.pathname,
    query: req.query,
    header: (name) => req.headers.get(name) ?? undefined,
    body(limit) {
      body ??= (async () => {
        if (Number(req.headers.get('content-length')) > limit) throw payloadTooLarge(`Request body exceeds ${limit} bytes`);
        const bytes = Buffer.from(await req.arrayBuffer());
        if (bytes.length > limit) throw payloadTooLarge(`Request body exceeds ${limit} bytes`);
        return bytes;
      })();
      return body;
    },
    stream: () => (req.body ? Readable.fromWeb(req.body as WebReadableStream<Uint8Array>) : Readable.from([])),
  };
}

export function toFunctionsResponse(reply: Reply): HttpResponseInit {
  const headers: Record<string, string> = { ...reply.headers };
  if (reply.raw !== undefined) return { status: reply.status, headers, body: reply.raw };
  if (reply.json === undefined) return { status: reply.status, headers };
  headers['content-type'] ??= 'application/json; charset=utf-8';
  return { status: reply.status, headers, body: JSON.stringify(reply.json) };
}

/** The Functions handler of one route. */
export const functionsHandler = (route: Route, services: () => Promise<Services>) => async (req: HttpRequest) =>
  toFunctionsResponse(await handle(route, fromFunctionsRequest(req), req.params, await services()));

export function registerFunctions(routes: readonly Route[], queueHandlers: readonly QueueHandler[], config: Config, services: () => Promise<Services>) {
  for (const route of routes) {
    functions.app.http(route.name, {
      methods: [route.method],
      authLevel: 'anonymous',
      route: route.path.replace(/^\//, ''),
      handler: functionsHandler(route, services),
    });
  }
  for (const q of queueHandlers) {
    functions.app.storageQueue(q.name, {
      queueName: q.queue(config),
      connection: 'AzureWebJobsStorage',
      handler: async (message, context) => {
        const meta = context.triggerMetadata ?? {};
        await q.handler(message, { id: String(meta.id), dequeueCount: Number(meta.dequeueCount ?? 1) }, await services());
      },
    });
  }
}
