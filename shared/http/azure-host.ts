// The Azure Functions host: registers every route as an HTTP function and every queue handler as a queue
// trigger (programming model v4). Same pipeline as the standalone host.
import { Readable } from 'node:stream';
import { ReadableStream } from 'node:stream/web';
import functions from '@azure/functions';
import type { Config } from '../config.js';
import { queueName, type QueueHandler } from '../queues/handler.js';
import type { Timer } from '../queues/timer.js';
import type { Services } from '../services.js';
import { payloadTooLarge } from '../errors.js';
import { once } from '../once.js';
import { handle } from './pipeline.js';
import type { Route } from './route.js';
import type { Api, PlatformRequest, Reply } from './types.js';

type HttpRequest = functions.HttpRequest;
type HttpResponseInit = functions.HttpResponseInit;

/** Maps a Functions request to the platform shape; `gone` is aborted when the client stops reading the answer. */
export function fromFunctionsRequest(req: HttpRequest, gone: AbortController = new AbortController()): PlatformRequest {
  const url = new URL(req.url);
  let body: Promise<Buffer> | undefined;
  return {
    signal: gone.signal,
    method: req.method,
    path: url.pathname,
    query: req.query,
    header: (name) => req.headers.get(name) ?? undefined,
    body(limit) {
      body ??= (async () => {
        if (Number(req.headers.get('content-length')) > limit)
          throw payloadTooLarge(`Request body exceeds ${limit} bytes`);
        const bytes = Buffer.from(await req.arrayBuffer());
        if (bytes.length > limit) throw payloadTooLarge(`Request body exceeds ${limit} bytes`);
        return bytes;
      })();
      return body;
    },
    stream: () => (req.body ? Readable.fromWeb(req.body as ReadableStream<Uint8Array>) : Readable.from([])),
  };
}

/** A streamed answer as a web stream (HTTP streams of the v4 model); cancelling it stops the producer. */
function webStream(pieces: AsyncIterable<string | Uint8Array>, gone: AbortController): ReadableStream<Uint8Array> {
  const iterator: AsyncIterator<string | Uint8Array, unknown> = pieces[Symbol.asyncIterator]();
  const encoder = new TextEncoder();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await iterator.next();
      if (next.done === true) controller.close();
      else controller.enqueue(typeof next.value === 'string' ? encoder.encode(next.value) : next.value);
    },
    async cancel() {
      gone.abort();
      await iterator.return?.();
    },
  });
}

export function toFunctionsResponse(reply: Reply, gone: AbortController = new AbortController()): HttpResponseInit {
  const headers: Record<string, string> = { ...reply.headers };
  if (reply.stream) return { status: reply.status, headers, body: webStream(reply.stream, gone) };
  if (reply.raw !== undefined) return { status: reply.status, headers, body: reply.raw };
  if (reply.json === undefined) return { status: reply.status, headers };
  headers['content-type'] ??= 'application/json; charset=utf-8';
  return { status: reply.status, headers, body: JSON.stringify(reply.json) };
}

/** The Functions handler of one route. */
export const functionsHandler = (route: Route, services: () => Promise<Services>) => async (req: HttpRequest) => {
  const gone = new AbortController();
  return toFunctionsResponse(
    await handle({
      route,
      request: fromFunctionsRequest(req, gone),
      rawParams: req.params,
      services: await services(),
    }),
    gone,
  );
};

/** What registering each kind of function needs; the rest of it (schemas, handler) may load at its first call. */
export type RouteHead = Pick<Route, 'name' | 'api' | 'method' | 'path'>;
export type QueueHead = Pick<QueueHandler, 'name' | 'queue'>;
export type TimerHead = Pick<Timer, 'name' | 'schedule' | 'standaloneOnly'>;

/** The functions a host registers: what registering each needs, and how each loads at its first call. */
export interface HostFunctions<
  R extends RouteHead = Route,
  Q extends QueueHead = QueueHandler,
  T extends TimerHead = Timer,
> {
  routes: readonly R[];
  queues: readonly Q[];
  timers: readonly T[];
  route(head: R): Promise<Route>;
  queue(head: Q): Promise<QueueHandler>;
  timer(head: T): Promise<Timer>;
}

/** Functions that are loaded already: each is its own head. */
export const loadedFunctions = (
  routes: readonly Route[],
  queues: readonly QueueHandler[],
  timers: readonly Timer[],
): HostFunctions => ({
  routes,
  queues,
  timers,
  route: (r) => Promise.resolve(r),
  queue: (q) => Promise.resolve(q),
  timer: (t) => Promise.resolve(t),
});

/** What the host registers with: `app` of @azure/functions, or a recorder in tests. */
export type Registrar = Pick<typeof functions.app, 'http' | 'storageQueue' | 'timer'>;

/**
 * The routes one Functions host serves for the APIs it runs. A host with both APIs (`func start` with the
 * sample settings) has two paths both APIs define, `/status` and `/openapi.json`: the Core API's route
 * serves them (its `/openapi.json?api=management` gives the Management document), so every (method, route)
 * pair is registered once.
 */
export function routesForHost<H extends RouteHead>(routes: readonly H[], apis: readonly Api[]): H[] {
  const seen = new Set<string>();
  const ordered = (['core', 'management'] as const)
    .filter((a) => apis.includes(a))
    .flatMap((api) => routes.filter((r) => r.api === api));
  return ordered.filter((r) => {
    const key = `${r.method} ${r.path.toLowerCase()}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** Registers the HTTP functions of the configured APIs, and the queue and timer triggers beside the Core API. */
export function registerHost<R extends RouteHead, Q extends QueueHead, T extends TimerHead>(
  fns: HostFunctions<R, Q, T>,
  { config, services, app = functions.app }: { config: Config; services: () => Promise<Services>; app?: Registrar },
) {
  // Streamed completions (server-sent events) need the v4 model's HTTP streams.
  if (app === functions.app) functions.app.setup({ enableHttpStream: true });
  const workers = config.serviceApis.includes('core') && config.queueWorkers;
  for (const t of workers ? fns.timers.filter((timer) => !timer.standaloneOnly) : []) {
    const timer = once(() => fns.timer(t));
    app.timer(t.name, { schedule: t.schedule, handler: async () => (await timer()).run(await services()) });
  }
  for (const r of routesForHost(fns.routes, config.serviceApis)) {
    const handler = once(async () => functionsHandler(await fns.route(r), services));
    app.http(r.name, {
      methods: [r.method],
      authLevel: 'anonymous',
      route: r.path.replace(/^\//, ''),
      handler: async (req) => (await handler())(req),
    });
  }
  for (const q of workers ? fns.queues : []) {
    const handler = once(() => fns.queue(q));
    app.storageQueue(q.name, {
      queueName: queueName(config, q.queue),
      connection: 'AzureWebJobsStorage',
      handler: async (message, context) => {
        const meta = context.triggerMetadata ?? {};
        await (
          await handler()
        ).run(message, { id: String(meta.id), dequeueCount: Number(meta.dequeueCount ?? 1) }, await services());
      },
    });
  }
}
