// The standalone host: serves a route table on node:http, mapping Node requests to the platform shape
// directly (no undici Request objects), for `npm start` and for self-hosting on a VM or container.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import cors from 'cors';
import type { EventEmitter } from 'node:events';
import type { Duplex, Readable } from 'node:stream';
import type { Services } from '../services.js';
import { errorReply, type ErrorStyle } from './envelopes.js';
import { EventChannel } from './event-stream.js';
import { badRequest, DomainError, notFound, payloadTooLarge } from '../errors.js';
import { handle, requestIdOf, SAFE_HEADERS, type PipelineOptions } from './pipeline.js';
import { misdirected, servesHost } from './hosts.js';
import type { Route } from './route.js';
import { createRouter } from './router.js';
import type { Api, PlatformRequest, Reply } from './types.js';

/**
 * Handlers still running. A handler outlives its connection when the client goes away mid-request; the
 * services it uses (the store) are closed only once it has finished, or its grace is over.
 */
export class InFlight {
  private count = 0;
  private waiters: (() => void)[] = [];
  /** The responses of running handlers, for an answer at shutdown instead of a reset connection. */
  private readonly responses = new Set<http.ServerResponse>();

  track(work: Promise<unknown>, res?: http.ServerResponse): void {
    this.count++;
    if (res) this.responses.add(res);
    const done = () => {
      if (res) this.responses.delete(res);
      if (--this.count === 0) for (const w of this.waiters.splice(0)) w();
    };
    work.then(done, done);
  }

  /**
   * Answers every request whose handler is still running past the shutdown grace: 503 with Retry-After and
   * the connection closed, so a client sees a refusal it can retry elsewhere, not a reset. A response that
   * already began (a stream) can only be ended.
   */
  answerRemaining(): void {
    for (const res of this.responses) {
      if (res.headersSent) {
        res.end();
        continue;
      }
      const body = JSON.stringify({
        error: { code: 'ServiceUnavailable', message: 'The service is stopping; try again' },
      });
      res.writeHead(503, {
        ...SAFE_HEADERS,
        'content-type': 'application/json; charset=utf-8',
        'retry-after': '1',
        connection: 'close',
        'content-length': Buffer.byteLength(body),
      });
      res.end(body);
    }
    this.responses.clear();
  }

  /** Resolves once no handler runs, or after `graceMs`. */
  drained(graceMs: number): Promise<void> {
    if (this.count === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, graceMs);
      timer.unref();
      this.waiters.push(() => (clearTimeout(timer), resolve()));
    });
  }
}

/**
 * An HTTP server for one API's routes. Call `listen` on it. `inFlight` tracks its handlers (its own unless
 * given); the pipeline options (checkAnswers) go to every request.
 */
export function createApiServer(
  api: Api,
  routes: readonly Route[],
  services: Services,
  options: PipelineOptions & { inFlight?: InFlight } = {},
): http.Server {
  const { inFlight = new InFlight(), ...pipeline } = options;
  const match = createRouter(routes.filter((r) => r.api === api));
  const style = api === 'core' ? 'core' : 'management';
  const browsers = corsFor(services.config);
  const server = http.createServer({ requestTimeout: 120_000, headersTimeout: 30_000 }, (req, res) => {
    // A request for a name that is not the service's (a rebound name) is answered before anything else.
    if (!servesHost(services.config, req.headers.host)) return answer(req, res, misdirected());
    // Only browsers send Origin; other clients skip CORS altogether.
    if (req.headers.origin !== undefined) browsers(req, res, () => serve(req, res));
    else serve(req, res);
  });
  /** An error answered without a route: the API's envelope and a request id. */
  const answer = (req: http.IncomingMessage, res: http.ServerResponse, error: DomainError) => {
    const r = errorReply(error, style, (req.url ?? '/').split('?')[0] ?? '/');
    send(req, res, { ...r, headers: { ...SAFE_HEADERS, ...r.headers, 'x-request-id': randomUUID() } });
  };
  const serve = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const request = new NodeRequest(req, res, {
      path: q < 0 ? url : url.slice(0, q),
      search: q < 0 ? '' : url.slice(q + 1),
    });
    const found = match(req.method ?? 'GET', request.path);
    let reply: Promise<Reply>;
    if (found.kind === 'found') {
      reply = handle({ route: found.route, request, rawParams: found.params, services }, pipeline);
      inFlight.track(reply, res);
    } else {
      const error =
        found.kind === 'not-found'
          ? notFound(`No route for ${request.path}`)
          : new DomainError('method-not-allowed', 'MethodNotAllowed', `Method ${req.method ?? ''} not allowed`, {
              headers: { allow: found.allow.join(', ') },
            });
      const r = errorReply(error, style, request.path);
      reply = Promise.resolve({
        ...r,
        headers: { ...SAFE_HEADERS, ...r.headers, 'x-request-id': requestIdOf(request) },
      });
    }
    // Answers are written in the loop's check phase, after the poll phase has read every request that
    // arrived: the writes of one turn go out together and clients' next requests arrive together, so
    // both sides wake less often. Measured on GET /status at 32 connections: 15,600 req/s at 64 µs CPU
    // per request when written as each answer is ready, 26,900 at 38 µs (bench `http` section: 0.55 to
    // 0.58x of plain node:http before, 0.90 to 0.96x). A lone request waits for nothing: the check phase
    // follows the poll phase at once.
    reply.then(
      (r) => void setImmediate(send, req, res, r),
      () =>
        void setImmediate(send, req, res, {
          status: 500,
          json: { error: { code: 'InternalError', message: 'An unexpected error occurred' } },
        }),
    );
  };
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => refuse(error, socket, style));
  server.keepAliveTimeout = 65_000;
  return server;
}

/**
 * Cross-origin calls from browsers: allowed from CORS_ALLOWED_ORIGINS, by default from the portal's own
 * origin (the Core API's port, on this host's names). Preflights are answered here; other requests go on
 * with the headers added. (In Azure the Function App's own CORS setting does this.)
 */
function corsFor(config: Services['config']): ReturnType<typeof cors> {
  const loopback = ['127.0.0.1', 'localhost', '[::1]', config.host];
  const allowed = new Set(config.portal.corsOrigins ?? loopback.map((h) => `http://${h}:${config.corePort}`));
  return cors({
    origin: (origin, done) => done(null, origin !== undefined && allowed.has(origin)),
    methods: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
    allowedHeaders: [
      'authorization',
      'content-type',
      'x-agent-access-token',
      'if-match',
      'if-none-match',
      'x-request-id',
      'x-continuation-token',
      'accept',
    ],
    exposedHeaders: ['x-request-id', 'x-continuation-token', 'etag', 'location', 'retry-after'],
    maxAge: 600,
  });
}

/**
 * A request Node could not parse (oversized headers: 431; a timeout: 408; anything else: 400) still gets
 * the API's envelope and a request id; the connection is then closed.
 */
function refuse(error: NodeJS.ErrnoException, socket: Duplex, style: ErrorStyle): void {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const [kind, code, message] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? (['headers-too-large', 'RequestHeaderFieldsTooLarge', 'The request headers are too large'] as const)
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? (['request-timeout', 'RequestTimeout', 'The request took too long to arrive'] as const)
        : (['invalid', 'BadRequest', 'The request is not valid HTTP'] as const);
  const reply = errorReply(new DomainError(kind, code, message), style, '/');
  const body = JSON.stringify(reply.json);
  const headers = {
    ...SAFE_HEADERS,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'x-request-id': randomUUID(),
    connection: 'close',
  };
  const head = Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}`)
    .join('\r\n');
  socket.end(`HTTP/1.1 ${reply.status} ${http.STATUS_CODES[reply.status] ?? ''}\r\n${head}\r\n\r\n${body}`);
}

/** Unread body bytes discarded after an answer to keep the connection; past this it is closed instead. */
const DRAIN_LIMIT = 1024 * 1024;

/**
 * After an answer given before the body was read to the end (a refused upload, a 401), the rest of the body
 * is read and dropped so the keep-alive connection stays usable; a body too large for that is cut off.
 */
function discardRest(req: http.IncomingMessage): void {
  if (req.complete || req.destroyed) return;
  req.unpipe();
  let budget = DRAIN_LIMIT;
  req.on('data', (chunk: Buffer) => {
    budget -= chunk.length;
    if (budget < 0) req.socket.destroy();
  });
  req.on('error', () => undefined);
  req.resume();
}

/**
 * A Node request in the platform shape. A class, not an object literal with getters: getters in a literal
 * are new closures per request, so each request object would get its own hidden class, and every property
 * read on it down the pipeline would go megamorphic (measured: about 10 µs of each GET /status).
 */
class NodeRequest implements PlatformRequest {
  readonly method: string;
  private bodyRead: Promise<Buffer> | undefined;
  private queryParsed: URLSearchParams | undefined;
  // The abort signal (and the close listener behind it) is made only for a handler that asks for it.
  private gone: AbortController | undefined;

  readonly path: string;
  private readonly search: string;

  constructor(
    private readonly req: http.IncomingMessage,
    private readonly res: http.ServerResponse,
    target: { path: string; search: string },
  ) {
    this.method = req.method ?? 'GET';
    ({ path: this.path, search: this.search } = target);
  }

  get signal(): AbortSignal {
    if (!this.gone) {
      const controller = (this.gone = new AbortController());
      const res = this.res;
      if (res.closed && !res.writableFinished) controller.abort();
      else res.once('close', () => res.writableFinished || controller.abort());
    }
    return this.gone.signal;
  }

  get query(): URLSearchParams {
    return (this.queryParsed ??= new URLSearchParams(this.search));
  }

  header(name: string): string | undefined {
    const v = this.req.headers[name];
    return Array.isArray(v) ? v.join(', ') : v;
  }

  body(limit: number): Promise<Buffer> {
    return (this.bodyRead ??= readBody(this.req, limit));
  }

  stream(): Readable {
    return this.req;
  }
}

function readBody(req: http.IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    // What is left of a refused body is dropped (or the connection closed) once the answer is sent.
    const tooLarge = () => reject(payloadTooLarge(`Request body exceeds ${limit} bytes`));
    if (Number(req.headers['content-length']) > limit) return tooLarge();
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) return void chunks.push(chunk);
      req.off('data', onData);
      req.pause();
      tooLarge();
    };
    req.on('data', onData);
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', () => reject(badRequest('The request body was cut off')));
  });
}

/** How long a streamed answer waits for a client to take what was written before closing its connection. */
export const WRITE_TIMEOUT_MS = 30_000;

/**
 * Whether what was written drained (`drain` from the emitter written to) or its client took nothing for
 * WRITE_TIMEOUT_MS or left (false).
 */
function drained(res: http.ServerResponse, written: EventEmitter): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      clearTimeout(timer);
      written.off('drain', onDrain);
      res.off('close', onClose);
      resolve(ok);
    };
    const onDrain = () => done(true);
    const onClose = () => done(false);
    const timer = setTimeout(() => done(false), WRITE_TIMEOUT_MS);
    written.once('drain', onDrain);
    res.once('close', onClose);
  });
}

/** Writes a streamed body's pieces; where a write returns false, wait for `drain` from `written`. */
interface BodyWriter {
  write(piece: string | Uint8Array): boolean;
  written: EventEmitter;
}

/**
 * Where Node frames the body in chunks and the response owns its socket (a pipelined request waits for its
 * turn without one), each text piece goes to the socket as one finished chunk: `res.write` costs about 2 KB
 * of short-lived objects a call (it corks the socket and queues the size line, the text and the line end
 * apart), and an instance holding thousands of open streams writes thousands of pieces a second.
 * `res.end()` still writes the last chunk.
 */
function bodyWriter(res: http.ServerResponse): BodyWriter {
  const socket = res.socket;
  if (!res.chunkedEncoding || !socket) return { write: (piece) => res.write(piece), written: res };
  return {
    write: (piece) => {
      if (typeof piece !== 'string') return res.write(piece);
      // An empty chunk would end the body.
      if (piece.length === 0) return true;
      return socket.write(`${Buffer.byteLength(piece).toString(16)}\r\n${piece}\r\n`);
    },
    written: socket,
  };
}

/**
 * Sends a streamed body piece by piece as it is produced; stops the producer when the client goes away or
 * stops reading (a write not taken within WRITE_TIMEOUT_MS, or a backlog past the event channel's bound).
 */
async function sendStream(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  { stream, ...reply }: Reply & { stream: AsyncIterable<string | Uint8Array> },
): Promise<void> {
  res.writeHead(reply.status, reply.headers);
  res.flushHeaders();
  const body = bodyWriter(res);
  try {
    await (stream instanceof EventChannel ? drainChannel(res, body, stream) : iterate(res, body, stream));
  } finally {
    res.end();
    discardRest(req);
  }
}

async function iterate(
  res: http.ServerResponse,
  body: BodyWriter,
  stream: AsyncIterable<string | Uint8Array>,
): Promise<void> {
  const pieces: AsyncIterator<string | Uint8Array, unknown> = stream[Symbol.asyncIterator]();
  try {
    for (;;) {
      const next = await pieces.next();
      if (next.done === true || res.destroyed || res.writableEnded) break;
      if (!body.write(next.value) && !(await drained(res, body.written))) {
        // The client stopped reading: its connection is closed instead of holding the answer in memory.
        res.destroy();
        break;
      }
    }
  } finally {
    await pieces.return?.();
  }
}

/** An event channel's events, each written as it is pushed: no promise per event (EventChannel.drainTo). */
function drainChannel(res: http.ServerResponse, body: BodyWriter, channel: EventChannel): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('close', gone);
      resolve();
    };
    // The client went away: the producer stops.
    const gone = () => {
      flow.stop();
      done();
    };
    // Emitted on a later turn of the loop at the soonest, when `flow` is set.
    res.on('close', gone);
    const flow = channel.drainTo({
      write: (event) => {
        if (res.destroyed) return false;
        // Ended already (answered at shutdown): nothing more goes after its last chunk; 'close' follows.
        if (res.writableEnded) return true;
        if (body.write(event)) return true;
        void drained(res, body.written).then((ok) => {
          if (ok) flow.resume();
          // The client stopped reading: its connection is closed instead of holding the answer in memory.
          else res.destroy();
        });
        return false;
      },
      end: (error) => {
        if (error) res.destroy();
        done();
      },
    });
  });
}

function send(req: http.IncomingMessage, res: http.ServerResponse, reply: Reply): void {
  // Already answered (503 at shutdown): the handler's own answer came too late.
  if (res.headersSent || res.writableEnded) {
    if (reply.stream) void reply.stream[Symbol.asyncIterator]().return?.();
    return;
  }
  if (reply.stream) {
    sendStream(req, res, { ...reply, stream: reply.stream }).catch(() => res.destroy());
    return;
  }
  // Every reply reaching here carries its own fresh headers object (the pipeline's, or the refusal's below).
  const headers: Record<string, string | number> = reply.headers ?? {};
  // Text stays a string: Node then sends the head and the body in one write.
  let payload: string | Buffer | undefined;
  if (reply.raw !== undefined) {
    payload = typeof reply.raw === 'string' ? reply.raw : Buffer.from(reply.raw);
  } else if (reply.json !== undefined) {
    payload = JSON.stringify(reply.json);
    headers['content-type'] ??= 'application/json; charset=utf-8';
  }
  headers['content-length'] = payload === undefined ? 0 : Buffer.byteLength(payload);
  res.writeHead(reply.status, headers);
  res.end(payload);
  discardRest(req);
}
