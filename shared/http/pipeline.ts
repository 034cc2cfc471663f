// The one wrapper every request runs through, on every host: request id, span, authentication,
// validation, authorization, handler, and the mapping of anything thrown to the route's error envelope.
// Checked answers (`checkAnswers`): each JSON answer of a handler is validated against the route's
// documented schema for its status (answers.ts); one that does not match is logged (route, status, zod
// issues) and answered 500, so tests catch a handler and its OpenAPI document drifting apart. On under
// vitest (VITEST is set) or when a host passes the option; off otherwise, so production pays nothing.
import { randomUUID } from 'node:crypto';
import {
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Context,
  type SpanOptions,
} from '@opentelemetry/api';
import type { z } from 'zod';
import { ANONYMOUS, type Principal } from '../auth/principal.js';
import type { Services } from '../services.js';
import {
  DomainError,
  badRequest,
  internalError,
  notFound,
  toError,
  validationError,
  type FieldError,
} from '../errors.js';
import { answerDrift } from './answers.js';
import { errorReply, type ErrorStyle } from './envelopes.js';
import { readJsonBody } from './json-body.js';
import type { Route } from './route.js';
import { recordRequest } from '../telemetry/metrics.js';
import { tracingActive } from '../telemetry/tracing.js';
import type { PlatformRequest, Reply } from './types.js';

const tracer = trace.getTracer('agent-platform');
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Headers of every answer: answers carry secrets and users' content, so no browser may sniff them into
 * another type and no cache may keep them (a route that may be cached sets its own cache-control).
 */
export const SAFE_HEADERS: Readonly<Record<string, string>> = {
  'x-content-type-options': 'nosniff',
  'cache-control': 'no-store',
};

/** Echoes a well-formed incoming x-request-id, else makes one. */
export function requestIdOf(request: PlatformRequest): string {
  const given = request.header('x-request-id');
  return given !== undefined && REQUEST_ID.test(given) ? given : randomUUID();
}

/** What a host may ask of the pipeline. */
export interface PipelineOptions {
  /** Validate handlers' JSON answers against their routes' schemas (default: under vitest). */
  checkAnswers?: boolean;
}

/** Whether answers are checked when the host does not say: in tests. */
const CHECK_ANSWERS = process.env.VITEST !== undefined;

/** One request for a route: what it asks, the path parameters the route's template matched, the services. */
export interface RouteCall {
  route: Route;
  request: PlatformRequest;
  rawParams: Readonly<Record<string, string>>;
  services: Services;
}

/** Runs one request through the route. Never throws: every failure becomes a reply. */
export async function handle(
  { route, request, rawParams, services }: RouteCall,
  options: PipelineOptions = {},
): Promise<Reply> {
  const requestId = requestIdOf(request);
  const started = performance.now();
  const caller: { id?: string } = {};
  const context = { route, request, rawParams, services, requestId, caller };
  const check = options.checkAnswers ?? CHECK_ANSWERS;
  const answer = async (): Promise<Reply> => {
    try {
      const reply = await run(context);
      return check ? checked(route, reply, { path: request.path, services }) : reply;
    } catch (thrown) {
      return failure(thrown, route.errors, { path: request.path, requestId, services });
    }
  };
  let reply: Reply;
  if (tracingActive()) {
    const attributes = {
      'http.route': route.path,
      'http.request.method': route.method,
      'svc.route.name': route.name,
      'svc.request_id': requestId,
      ...(rawParams.instanceId !== undefined ? { 'Svc-InstanceId': rawParams.instanceId } : {}),
    };
    const [options, parent] = spanStart(route, request, attributes);
    reply = await tracer.startActiveSpan(route.name, options, parent, async (span) => {
      const r = await answer();
      span.setAttribute('http.response.status_code', r.status);
      if (r.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
      return r;
    });
  } else {
    reply = await answer();
  }
  const elapsed = performance.now() - started;
  recordRequest(elapsed / 1000, { method: route.method, route: route.path, name: route.name, status: reply.status });
  // The access line: the route, never its parameters' values beyond the path, never a credential.
  services.log.info('Request', {
    method: route.method,
    route: route.name,
    status: reply.status,
    duration_ms: Math.round(elapsed * 100) / 100,
    request_id: requestId,
    caller: caller.id ?? null,
  });
  // A fresh object: the host may add to it (content-type, content-length) as it sends.
  return { ...reply, headers: { ...SAFE_HEADERS, ...reply.headers, 'x-request-id': requestId } };
}

/** Where the request's span starts: a new root linked to the caller at boundaries, else the caller's trace. */
function spanStart(
  route: Route,
  request: PlatformRequest,
  attributes: SpanOptions['attributes'],
): [SpanOptions, Context] {
  const incoming = propagation.extract(ROOT_CONTEXT, request, { get: (r, key) => r.header(key), keys: () => [] });
  if (!route.traceBoundary) return [{ kind: SpanKind.SERVER, attributes }, propagation.deleteBaggage(incoming)];
  const caller = trace.getSpanContext(incoming);
  const links = caller && trace.isSpanContextValid(caller) ? [{ context: caller }] : [];
  return [{ kind: SpanKind.SERVER, attributes, root: true, links }, ROOT_CONTEXT];
}

/** One request on its way through the pipeline. */
interface RequestContext {
  route: Route;
  request: PlatformRequest;
  rawParams: Readonly<Record<string, string>>;
  services: Services;
  requestId: string;
  /** Who called, once authenticated, for the access line. */
  caller: { id?: string };
}

async function run({ route, request, rawParams, services, requestId, caller }: RequestContext): Promise<Reply> {
  // Another instance's path does not exist here.
  if (rawParams.instanceId !== undefined && rawParams.instanceId.toLowerCase() !== services.config.instanceId) {
    throw notFound(`Instance ${rawParams.instanceId} not found`);
  }
  const principal: Principal =
    route.auth === 'none' ? ANONYMOUS : await services.auth.authenticate(request, route.auth);
  if (route.auth !== 'none') caller.id = principal.id;
  const params = parse(route.params, rawParams, 'path');
  const query = route.query ? parse(route.query, Object.fromEntries(request.query), 'query') : {};
  const body = route.body
    ? parse(route.body, await readJsonBody(request, services.config.maxJsonBodyBytes), 'body')
    : undefined;
  if (route.permission) {
    const { action, scope } = route.permission({ params, principal });
    await services.authorizer.require(principal, action, scope);
  }
  return route.handler({ params, query, body, principal, request, services, requestId });
}

/** Validates one part of the request; failures become a 400 naming each field. */
function parse(schema: z.ZodType | undefined, value: unknown, part: 'path' | 'query' | 'body'): unknown {
  if (!schema) return value;
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const details: FieldError[] = result.error.issues.map((issue) => ({
    field: issue.path.length > 0 ? issue.path.join('.') : part,
    message: issue.message,
  }));
  throw validationError(details);
}

/** A handler's answer as the route documents it, or a 500 naming nothing internal when it is not. */
function checked(route: Route, reply: Reply, { path, services }: { path: string; services: Services }): Reply {
  const drift = answerDrift(route.responses, reply);
  if (!drift) return reply;
  services.log.error('An answer does not match its route', {
    route: route.name,
    status: drift.status,
    problem: drift.problem,
    issues: drift.issues,
  });
  return errorReply(internalError(), route.errors, path);
}

function failure(
  thrown: unknown,
  style: ErrorStyle,
  { path, requestId, services }: { path: string; requestId: string; services: Services },
): Reply {
  if (thrown instanceof DomainError) {
    if (thrown.code === 'ValidationError' && style !== 'core') {
      // Outside the Core API a validation failure reads "field: message" in one line.
      const message = thrown.details.map((d) => `${d.field}: ${d.message}`).join('; ');
      return errorReply(badRequest(message, thrown.details), style, path);
    }
    return errorReply(thrown, style, path);
  }
  const error = toError(thrown);
  services.log.error('Unhandled error', { requestId, error: error.stack ?? error.message });
  return errorReply(internalError(), style, path);
}
