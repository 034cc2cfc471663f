// The framework-free request and reply shapes that every route handler sees, whichever host serves it.
import type { Readable } from 'node:stream';

export type Api = 'core' | 'management';
export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** An incoming request as the hosts hand it to the pipeline. Header names are lower-case. */
export interface PlatformRequest {
  readonly method: string;
  /** Path without query string, still percent-encoded. */
  readonly path: string;
  readonly query: URLSearchParams;
  header(name: string): string | undefined;
  /** The whole body, read at most once; rejects with 413 past `limit` bytes. */
  body(limit: number): Promise<Buffer>;
  /** The body as a stream, for large uploads. */
  stream(): Readable;
  /** Aborted when the client goes away before the answer is complete (a streamed answer stops then). */
  readonly signal: AbortSignal;
}

/**
 * What a handler answers: JSON (`json`), raw bytes or text (`raw`), a body sent piece by piece as it is
 * produced (`stream`: server-sent events, file downloads), or no body.
 */
export interface Reply {
  status: number;
  headers?: Record<string, string>;
  json?: unknown;
  raw?: Uint8Array | string;
  stream?: AsyncIterable<string | Uint8Array>;
}

export const json = (status: number, body: unknown, headers?: Record<string, string>): Reply => ({
  status,
  json: body,
  ...(headers ? { headers } : {}),
});
