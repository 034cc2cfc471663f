// The framework-free request and reply shapes that every route handler sees, whichever host serves it.
import type { Readable } from 'node:stream';
import type { z } from 'zod';

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
 * produced (`stream`: server-sent events, file downloads), or no body. `S` is the status, a literal type
 * where it is known (a route's answers are checked against its documented statuses, shared/http/answers.ts).
 */
export interface Reply<S extends number = number> {
  status: S;
  headers?: Record<string, string>;
  json?: unknown;
  raw?: Uint8Array | string;
  stream?: AsyncIterable<string | Uint8Array>;
}

/** A JSON reply: its status and the type of its body as the handler built them. */
export interface JsonReply<S extends number = number, B = unknown> extends Reply<S> {
  json: B;
}

/**
 * A JSON reply. The status and the body keep their literal types (`200`, `{ status: 'live' }`), so the
 * route's schema for that status can check the body (shared/http/answers.ts).
 */
export const json = <S extends number, const B>(
  status: S,
  body: B,
  headers?: Record<string, string>,
): JsonReply<S, B> => ({
  status,
  json: body,
  ...(headers ? { headers } : {}),
});

/** One media type of a body, for the OpenAPI document. */
export interface ContentDoc {
  contentType: string;
  schema: z.ZodType;
}

/**
 * Documentation of one response, for the OpenAPI document: one body (`schema`, JSON unless `contentType`
 * says otherwise) or several (`content`). An error status without either gets the route's error envelope.
 */
export interface ResponseDoc {
  description: string;
  schema?: z.ZodType;
  contentType?: string;
  content?: readonly ContentDoc[];
  /** Response headers a client may rely on, by name. */
  headers?: Record<string, { description: string; type: 'string' | 'integer' }>;
}
