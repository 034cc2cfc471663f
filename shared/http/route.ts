// A route is data: method, path template, schemas, permission and handler. Both hosts serve the same table.
import type { z } from 'zod';
import type { AuthMode, Principal } from '../auth/principal.js';
import type { Services } from '../services.js';
import type { Answer, Responses } from './answers.js';
import type { ErrorStyle } from './envelopes.js';
import type { Api, ContentDoc, Method, PlatformRequest, Reply } from './types.js';

/** A role-based permission: an action (`Svc.Agent/agents/read`) on a resource scope (a resource path). */
export interface Permission {
  action: string;
  scope: string;
}

export interface HandlerInput<P, Q, B> {
  params: P;
  query: Q;
  body: B;
  principal: Principal;
  request: PlatformRequest;
  services: Services;
  requestId: string;
}

type Infer<S> = S extends z.ZodType ? z.output<S> : Record<string, never>;

/** What a route is besides its schemas, its answers and its handler. */
interface RouteHead {
  /** Function name: `<group>-<action>`. */
  name: string;
  api: Api;
  method: Method;
  /** Path template with `{param}` segments, e.g. `/instances/{instanceId}/sessions`. */
  path: string;
  summary: string;
  tag: string;
  auth: AuthMode;
  errors: ErrorStyle;
  /** `stream`: the handler reads the body itself (multipart uploads), described by `bodyDoc`. */
  bodyKind?: 'json' | 'stream';
  bodyDoc?: ContentDoc | readonly ContentDoc[];
  /**
   * A trace boundary (completions, status polls; docs/architecture.md, Telemetry): every call starts a new root span
   * and keeps the caller's traceparent only as a link. Other routes continue the caller's trace.
   */
  traceBoundary?: boolean;
}

export interface RouteSpec<
  P extends z.ZodType | undefined,
  Q extends z.ZodType | undefined,
  B extends z.ZodType | undefined,
  R extends Responses,
> extends RouteHead {
  params?: P;
  query?: Q;
  /** JSON body schema; leave out for bodiless routes and for `stream` bodies read by the handler. */
  body?: B;
  /** By status; a handler answers one of these statuses, a JSON body typed by its schema (answers.ts). */
  responses: R;
  // Methods, not function-typed fields: a route with its types erased (`Route`) still holds them, and the
  // pipeline only calls them with the values its schemas produced.
  permission?(input: { params: Infer<P>; principal: Principal }): Permission;
  handler(input: HandlerInput<Infer<P>, Infer<Q>, Infer<B>>): Promise<Answer<R>>;
}

/** A route with its types erased, as the hosts hold it. */
export interface Route extends RouteHead {
  params?: z.ZodType | undefined;
  query?: z.ZodType | undefined;
  body?: z.ZodType | undefined;
  responses: Responses;
  permission?(input: { params: unknown; principal: Principal }): Permission;
  handler(input: HandlerInput<unknown, unknown, unknown>): Promise<Reply>;
}

/** Defines a route; the handler's input types follow from its schemas, its answers from its responses. */
export function defineRoute<
  P extends z.ZodType | undefined = undefined,
  Q extends z.ZodType | undefined = undefined,
  B extends z.ZodType | undefined = undefined,
  const R extends Responses = Responses,
>(spec: RouteSpec<P, Q, B, R>): Route {
  return spec;
}

/** Names of the `{param}` segments of a path template, in order. */
export const templateParams = (template: string): string[] =>
  [...template.matchAll(/\{([A-Za-z0-9_]+)\}/g)].map((m) => m[1] ?? '');
