// A route is data: method, path template, schemas, permission and handler. Both hosts serve the same table.
import type { z } from 'zod';
import type { AuthMode, Principal } from '../auth/principal.js';
import type { Services } from '../services.js';
import type { ErrorStyle } from './envelopes.js';
import type { Api, ContentDoc, Method, PlatformRequest, Reply, ResponseDoc } from './types.js';

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

export interface RouteSpec<
  P extends z.ZodType | undefined,
  Q extends z.ZodType | undefined,
  B extends z.ZodType | undefined,
> {
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
  params?: P;
  query?: Q;
  /** JSON body schema; leave out for bodiless routes and for `stream` bodies read by the handler. */
  body?: B;
  /** `stream`: the handler reads the body itself (multipart uploads), described by `bodyDoc`. */
  bodyKind?: 'json' | 'stream';
  bodyDoc?: ContentDoc | readonly ContentDoc[];
  responses: Record<number, ResponseDoc>;
  /**
   * A trace boundary (completions, status polls; docs/architecture.md, Telemetry): every call starts a new root span
   * and keeps the caller's traceparent only as a link. Other routes continue the caller's trace.
   */
  traceBoundary?: boolean;
  permission?: (input: { params: Infer<P>; principal: Principal }) => Permission;
  handler: (input: HandlerInput<Infer<P>, Infer<Q>, Infer<B>>) => Promise<Reply>;
}

/** A route with its types erased, as the hosts hold it. */
export type Route = RouteSpec<z.ZodType | undefined, z.ZodType | undefined, z.ZodType | undefined>;

/** Defines a route; the handler's input types follow from its schemas. */
export function defineRoute<
  P extends z.ZodType | undefined = undefined,
  Q extends z.ZodType | undefined = undefined,
  B extends z.ZodType | undefined = undefined,
>(spec: RouteSpec<P, Q, B>): Route {
  // The pipeline only calls the handler with values those schemas produced.
  return spec;
}

/** Names of the `{param}` segments of a path template, in order. */
export const templateParams = (template: string): string[] =>
  [...template.matchAll(/\{([A-Za-z0-9_]+)\}/g)].map((m) => m[1] ?? '');
