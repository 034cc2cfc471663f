// The realtime relay: a user's WebSocket to the service, and the service's WebSocket to the agent's realtime
// model, with the service in between. It holds the model's credentials, sends the agent's instructions
// (instructions.ts), passes the OpenAI Realtime events both ways, refuses a client's attempt to change the
// instructions or the model (client-events.ts), keeps each finished transcript as a message of the session
// and records usage per response (model-events.ts), and ends the call at the longest duration or on a stop
// word. Served by the standalone server (the Functions host cannot hold a WebSocket): docs/realtime-speech.md.
import http from 'node:http';
import { Readable, type Duplex } from 'node:stream';
import WebSocket, { WebSocketServer, type RawData } from 'ws';
import type { Principal } from '../auth/principal.js';
import { DomainError } from '../errors.js';
import { statusOf } from '../http/envelopes.js';
import { misdirected, servesHost } from '../http/hosts.js';
import type { PlatformRequest } from '../http/types.js';
import { admission, refused, type AdmissionDeps, type ClientEvent } from './client-events.js';
import { instructionsOf, type InstructionsDeps } from './instructions.js';
import { KEPT_EVENT, observer, parseEvent, type ModelEventsDeps } from './model-events.js';
import { bytesOf, MAX_EVENT_BYTES, openModelSocket, textOf, type ModelSocketDeps } from './model-socket.js';
import {
  callLimitSeconds,
  claimCall,
  DEFAULT_REALTIME_VOICE,
  type Call,
  type RealtimeSessionsDeps,
} from './sessions.js';
import type { Authenticator } from '../auth/authenticate.js';
import type { Config } from '../config.js';
import type { Log } from '../log.js';

/** What this module uses of the service (the hosts pass the whole of it). */
export interface RelayDeps
  extends AdmissionDeps, InstructionsDeps, ModelEventsDeps, ModelSocketDeps, RealtimeSessionsDeps {
  readonly auth: Authenticator;
  readonly config: Config;
  readonly log: Log;
}

const PATH = /^\/instances\/([^/]+)\/realtime-sessions\/([0-9a-fA-F-]{36})\/ws$/;
/**
 * Bytes the relay holds for a call, each way: events for a client that is not reading (and for a model that
 * is not), and a client's events while the model's socket opens. A call past it ends.
 */
export const MAX_BUFFERED_BYTES = 2 * 1024 * 1024;
/** How long an ended call waits for the usage of the answer it cancelled before closing the model's socket. */
const CANCEL_WAIT_MS = 5000;

/** Why a call ended, as the client's `relay.call_ended` event and the close reason say. */
export type EndReason =
  'stop_word' | 'max_duration' | 'model_closed' | 'client_closed' | 'budget_exceeded' | 'client_too_slow';

/** The bearer token of an upgrade: the Authorization header, else a `bearer.<token>` subprotocol. */
function tokenOf(req: http.IncomingMessage): string | undefined {
  const header = req.headers.authorization;
  const bearer = header ? /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1] : undefined;
  if (bearer) return bearer;
  const offered = (req.headers['sec-websocket-protocol'] ?? '').split(',').map((p) => p.trim());
  return offered.find((p) => p.startsWith('bearer.'))?.slice('bearer.'.length);
}

/** An upgrade as the authenticator reads a request: its bearer token and nothing else (it has no body). */
function upgradeRequest(req: http.IncomingMessage, path: string, token: string): PlatformRequest {
  return {
    method: req.method ?? 'GET',
    path,
    query: new URLSearchParams(),
    header: (name: string) => (name.toLowerCase() === 'authorization' ? `Bearer ${token}` : undefined),
    body: () => Promise.resolve(Buffer.alloc(0)),
    stream: () => Readable.from([]),
    signal: new AbortController().signal,
  };
}

/** Answers an upgrade it will not take with a plain HTTP status and the service's error envelope. */
function refuse(socket: Duplex, { status, code, message }: { status: number; code: string; message: string }): void {
  const body = JSON.stringify({ error: { code, message } });
  socket.end(
    `HTTP/1.1 ${status} ${http.STATUS_CODES[status] ?? 'Error'}\r\ncontent-type: ` +
      `application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

/** The text of anything thrown. */
const messageOf = (e: unknown) => (e instanceof Error ? e.message : String(e));

/** Serves the relay's upgrades on a server; other upgrades are refused. */
export function attachRelay(server: http.Server, s: RelayDeps): { close(): void } {
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: MAX_EVENT_BYTES,
    // The client's protocol is echoed, never its token when it offered another one too.
    handleProtocols: (protocols) => [...protocols].find((p) => !p.startsWith('bearer.')) ?? [...protocols][0] ?? false,
  });
  const calls = new Set<WebSocket>();
  server.on('upgrade', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    if (!servesHost(s.config, req.headers.host)) {
      const error = misdirected();
      return refuse(socket, { status: statusOf(error), code: error.code, message: error.message });
    }
    const path = (req.url ?? '').split('?')[0] ?? '';
    const match = PATH.exec(path);
    if (!match || match[1]?.toLowerCase() !== s.config.instanceId)
      return refuse(socket, { status: 404, code: 'NotFound', message: 'No WebSocket here' });
    const token = tokenOf(req);
    if (!token)
      return refuse(socket, {
        status: 401,
        code: 'Unauthorized',
        message: 'A bearer token is required (Authorization header, or the subprotocol bearer.<token>)',
      });
    void (async () => {
      let principal: Principal;
      let call: Call;
      try {
        principal = await s.auth.authenticate(upgradeRequest(req, path, token), 'bearer');
        call = await claimCall(s, principal, match[2] ?? '');
      } catch (e) {
        if (e instanceof DomainError) return refuse(socket, { status: statusOf(e), code: e.code, message: e.message });
        s.log.warn('A realtime call could not start', { error: messageOf(e) });
        return refuse(socket, { status: 500, code: 'InternalError', message: 'The call could not start' });
      }
      wss.handleUpgrade(req, socket, head, (client) => {
        calls.add(client);
        client.on('close', () => calls.delete(client));
        void relay(s, { principal, call, client });
      });
    })();
  });
  return {
    close() {
      for (const c of calls) c.close(1001, 'The service is stopping');
      wss.close();
    },
  };
}

/** One call: the model's socket opened for it, events passed both ways until either side ends it. */
async function relay(
  s: RelayDeps,
  { principal, call, client }: { principal: Principal; call: Call; client: WebSocket },
): Promise<void> {
  const started = Date.now();
  // The model's events are kept in the order they came: one after another, each stamped later than the last
  // (a user transcript and its answer can come within one millisecond, and the session lists by time).
  let kept: Promise<void> = Promise.resolve();
  let stamped = 0;
  const stamp = () => new Date((stamped = Math.max(Date.now(), stamped + 1))).toISOString();
  const send = (event: unknown) => client.readyState === WebSocket.OPEN && client.send(JSON.stringify(event));
  // What the relay holds for either side is bounded: a client that does not read (or a model that does not)
  // ends the call.
  const overflowing = () =>
    client.bufferedAmount > MAX_BUFFERED_BYTES ||
    (model?.bufferedAmount ?? 0) > MAX_BUFFERED_BYTES ||
    pendingBytes > MAX_BUFFERED_BYTES;
  let ended = false;
  let model: WebSocket | undefined;
  const end = (reason: EndReason, detail: string, code = 1000) => {
    if (ended) return;
    ended = true;
    clearTimeout(timer);
    // A client that does not read gets no goodbye: what it has not taken is dropped with its connection.
    if (reason === 'client_too_slow') client.terminate();
    send({ type: 'relay.call_ended', reason, message: detail });
    if (client.readyState === WebSocket.OPEN || client.readyState === WebSocket.CONNECTING)
      client.close(code, detail.slice(0, 120));
    if (!model || (model.readyState !== WebSocket.OPEN && model.readyState !== WebSocket.CONNECTING)) return;
    // An answer under way is cancelled and its usage awaited (a while at most): what it spent is charged.
    if (answering > 0 && model.readyState === WebSocket.OPEN) {
      model.send(JSON.stringify({ type: 'response.cancel' }));
      setTimeout(() => model?.close(1000), CANCEL_WAIT_MS).unref();
    } else model.close(1000);
  };
  let answering = 0;
  const observe = observer(s, { principal, call, started, end });
  const limit = callLimitSeconds(s, call);
  const timer = setTimeout(
    () => end('max_duration', `The call reached its longest duration (${limit} s)`),
    limit * 1000,
  );
  // The client's events wait while the model's socket opens.
  const pending: string[] = [];
  let pendingBytes = 0;
  const fromClient = (data: RawData, binary: boolean) => {
    if (binary)
      return send({
        type: 'error',
        error: { type: 'invalid_request_error', code: 'binary_not_accepted', message: 'Events are JSON text' },
      });
    const text = textOf(data);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    // Anything but an object (null, a number, a list) is not an event: refused like text that is not JSON.
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      return send({
        type: 'error',
        error: { type: 'invalid_request_error', code: 'invalid_json', message: 'Events are JSON objects' },
      });
    }
    const event: ClientEvent = parsed;
    const why = refused(event);
    if (why)
      return send({
        type: 'error',
        error: {
          type: 'invalid_request_error',
          code: 'locked_by_service',
          message: `Refused: ${why}`,
          event_id: event.event_id ?? null,
        },
      });
    pendingBytes += text.length;
    if (overflowing())
      return end('client_too_slow', `The call held more than ${MAX_BUFFERED_BYTES / 1048576} MiB of events`, 1008);
    // Events that wait for a check (typed text to screen, an answer to admit) keep their order with the others.
    const check = admitted(event);
    if (!check && !ordered) return toModel(text);
    ordered = (ordered ?? Promise.resolve())
      .then(async () => {
        const refusal = check ? await check() : undefined;
        if (!refusal) {
          if (event.type === 'response.create') requested++;
          return toModel(text);
        }
        pendingBytes -= text.length;
        send({ type: 'error', error: { type: 'invalid_request_error', ...refusal, event_id: event.event_id ?? null } });
      })
      .catch((e: unknown) => end('model_closed', `A client event could not be checked: ${messageOf(e)}`, 1011));
  };
  const admitted = admission(s, {
    principal,
    call,
    answering: () => requested > 0 || answering > 0,
    spent: (message) => end('budget_exceeded', message),
  });
  let ordered: Promise<void> | undefined;
  /** Answers asked for and not yet begun (response.create sent, response.created not yet seen). */
  let requested = 0;
  // Events go to the model once its socket is open (and the service's session.update has gone first).
  const toModel = (text: string) => {
    if (ended) return;
    if (ready && model?.readyState === WebSocket.OPEN) {
      pendingBytes -= text.length;
      model.send(text);
    } else pending.push(text);
  };
  let ready = false;
  client.on('message', (data: RawData, binary: boolean) => {
    // Nothing a client sends may take the process down: a failure here ends this call alone.
    try {
      fromClient(data, binary);
    } catch (e) {
      s.log.warn('A realtime client event could not be handled', { error: messageOf(e) });
      end('client_closed', 'The call ended: an event could not be handled', 1011);
    }
  });
  client.on('close', () => end('client_closed', 'The client ended the call'));
  client.on('error', () => end('client_closed', 'The client connection failed'));

  try {
    model = await openModelSocket(s, call);
  } catch (e) {
    return end('model_closed', `The model could not be reached: ${messageOf(e)}`, 1011);
  }
  const socket = model;
  socket.on('open', () => {
    void instructionsOf(s, principal, call).then(
      (instructions) => {
        socket.send(
          JSON.stringify({
            type: 'session.update',
            session: {
              instructions,
              voice: call.settings.voice ?? DEFAULT_REALTIME_VOICE,
              input_audio_transcription: { model: 'whisper-1' },
            },
          }),
        );
        ready = true;
        for (const text of pending.splice(0)) toModel(text);
      },
      (e: unknown) => end('model_closed', `The call could not be prepared: ${messageOf(e)}`, 1011),
    );
  });
  socket.on('message', (data: RawData) => {
    // Passed on as the bytes that came (as text frames), not decoded and encoded again.
    const raw = bytesOf(data);
    if (client.readyState === WebSocket.OPEN) client.send(raw, { binary: false });
    if (overflowing())
      end(
        'client_too_slow',
        `The client did not read: the call held more than ${MAX_BUFFERED_BYTES / 1048576} MiB of events for it`,
        1008,
      );
    const text = raw.toString('utf8');
    // Most events are audio deltas: only those that can carry a transcript or usage are read.
    if (!KEPT_EVENT.test(text)) return;
    const event = parseEvent(text);
    if (!event) return;
    if (event.type === 'response.created') {
      requested = Math.max(0, requested - 1);
      answering++;
    }
    // A refused request (an error of the model's) leaves no answer to wait for.
    if (event.type === 'error') requested = 0;
    if (event.type !== 'response.done') {
      if (ended || event.type === 'response.created' || event.type === 'error') return;
    } else answering = Math.max(0, answering - 1);
    const at = stamp();
    kept = kept
      .then(() => observe(event, at))
      .catch((e: unknown) => s.log.warn('A realtime event could not be recorded', { error: messageOf(e) }))
      // An ended call's model socket stays open only for the usage of the answer it cancelled.
      .then(() => {
        if (ended && answering === 0) socket.close(1000);
      });
  });
  socket.on('unexpected-response', (_req, res) =>
    end('model_closed', `The model refused the call (${res.statusCode ?? 0})`, 1011),
  );
  socket.on('error', (e) => end('model_closed', `The model's connection failed: ${e.message}`, 1011));
  socket.on('close', (code) => end('model_closed', `The model ended the call (${code})`, code === 1000 ? 1000 : 1011));
}
