// The relay's socket to the agent's realtime model: its URL on the model's endpoint, opened with the
// endpoint's credentials through the outbound guard, and the frames either socket carries, read as bytes.
import WebSocket, { type RawData } from 'ws';
import type { Config } from '../config.js';
import type { ModelCredentials } from '../models/credentials.js';
import { guardedLookup, type Resolve } from '../net/outbound.js';
import type { Call } from './sessions.js';

/** What opening a model's socket uses of the service. */
export interface ModelSocketDeps {
  readonly credentials: ModelCredentials;
  readonly config: Pick<Config, 'allowPrivateNetwork'>;
}

/** The largest event either side may send (audio frames are a few KiB). */
export const MAX_EVENT_BYTES = 1024 * 1024;

/** A WebSocket message's bytes (ws hands out a Buffer, fragments or an ArrayBuffer). */
export const bytesOf = (data: RawData): Buffer =>
  Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
/** A WebSocket message as text. */
export const textOf = (data: RawData): string => bytesOf(data).toString('utf8');

/** The socket URL of a realtime model on its endpoint (docs/realtime-speech.md). */
export function modelSocketUrl(call: Pick<Call, 'endpoint' | 'model'>): string {
  const base = call.endpoint.url.replace(/\/$/, '').replace(/^http/, 'ws');
  const deployment = encodeURIComponent(call.model.deployment_name);
  if (call.endpoint.provider === 'azure-openai') {
    const apiVersion = encodeURIComponent(call.endpoint.apiVersion ?? '2024-10-01-preview');
    return `${base}/openai/realtime?api-version=${apiVersion}&deployment=${deployment}`;
  }
  return `${base}/realtime?model=${deployment}`;
}

/** How a model socket is reached: the resolver and trusted certificates (tests name their own). */
export interface SocketReach {
  resolve?: Resolve;
  ca?: Buffer;
}

/**
 * Opens the model's socket for a call: the endpoint's credentials (an API key, or a managed-identity token
 * the credential gate mints only for that endpoint's audience and host), through the outbound guard, with
 * no redirects followed.
 */
export async function openModelSocket(
  s: ModelSocketDeps,
  call: Pick<Call, 'endpoint' | 'model'>,
  reach: SocketReach = {},
): Promise<WebSocket> {
  const headers = {
    ...(await s.credentials.headers(call.endpoint)),
    ...(call.endpoint.provider === 'openai' ? { 'openai-beta': 'realtime=v1' } : {}),
  };
  const rules = {
    policy: call.endpoint.privateNetwork ? ('model' as const) : ('user' as const),
    allowPrivateNetwork: s.config.allowPrivateNetwork,
  };
  return new WebSocket(modelSocketUrl(call), {
    headers,
    lookup: guardedLookup(rules, reach.resolve),
    ...(reach.ca ? { ca: reach.ca } : {}),
    maxPayload: 16 * MAX_EVENT_BYTES,
    // Audio is already dense and each frame is due in 20 ms: compressing it costs latency for little.
    perMessageDeflate: false,
    handshakeTimeout: call.endpoint.timeoutMs,
    followRedirects: false,
  });
}
