// Builds the OpenAPI 3.1 document of one API from the route table and its zod schemas.
import { z } from 'zod';
import type { Route } from './route.js';
import { templateParams } from './route.js';
import { CoreErrorBody, ManagementErrorBody, ProblemDetailsBody } from './schemas.js';
import type { Api } from './types.js';

type Json = Record<string, unknown>;

const TITLES: Record<Api, string> = { core: 'Agent Platform Core API', management: 'Agent Platform Management API' };

function schemaOf(schema: z.ZodType, io: 'input' | 'output'): Json {
  const json = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any', reused: 'inline' }) as Json;
  delete json.$schema;
  return json;
}

function errorSchema(route: Route): Json {
  const body = route.errors === 'core' ? CoreErrorBody : route.errors === 'management' ? ManagementErrorBody : ProblemDetailsBody;
  const type = route.errors === 'problem' ? 'application/problem+json' : 'application/json';
  return { [type]: { schema: schemaOf(body, 'output') } };
}

function parameters(route: Route): Json[] {
  const pathShape = route.params instanceof z.ZodObject ? (route.params.shape as Record<string, z.ZodType>) : {};
  const path = templateParams(route.path).map((name) => ({
    name,
    in: 'path',
    required: true,
    schema: pathShape[name] ? schemaOf(pathShape[name], 'input') : { type: 'string' },
  }));
  const queryShape = route.query instanceof z.ZodObject ? (route.query.shape as Record<string, z.ZodType>) : {};
  const query = Object.entries(queryShape).map(([name, s]) => ({
    name,
    in: 'query',
    required: !s.safeParse(undefined).success,
    schema: schemaOf(s, 'input'),
    ...(s.description ? { description: s.description } : {}),
  }));
  return [...path, ...query];
}

function operation(route: Route): Json {
  const responses: Json = {};
  for (const [status, doc] of Object.entries(route.responses)) {
    responses[status] = {
      description: doc.description,
      ...(doc.schema ? { content: { [doc.contentType ?? 'application/json']: { schema: schemaOf(doc.schema, 'output') } } } : {}),
    };
  }
  const errors = errorSchema(route);
  const add = (status: number, description: string) => (responses[status] ??= { description, content: errors });
  if (route.params || route.query || route.body || route.bodyKind === 'stream') add(400, 'Invalid request');
  if (route.auth !== 'none') add(401, 'Authentication required, or the token is invalid or expired');
  if (route.auth !== 'none') add(403, 'Not permitted');
  if (route.path.includes('{')) add(404, 'Not found');
  add(500, 'Unexpected error');

  const body = route.body ?? route.bodyDoc?.schema;
  return {
    operationId: route.name,
    summary: route.summary,
    tags: [route.tag],
    security: route.auth === 'none' ? [] : route.auth === 'bearer' ? [{ bearerAuth: [] }] : [{ bearerAuth: [] }, { agentAccessToken: [] }],
    parameters: parameters(route),
    ...(body
      ? {
          requestBody: {
            required: true,
            content: { [route.bodyDoc?.contentType ?? 'application/json']: { schema: schemaOf(body, 'input') } },
          },
        }
      : {}),
    responses,
  };
}

/** The OpenAPI 3.1 document for one API. */
export function buildOpenApi(api: Api, routes: readonly Route[], version: string): Json {
  const paths: Record<string, Json> = {};
  for (const route of routes.filter((r) => r.api === api)) {
    (paths[route.path] ??= {})[route.method.toLowerCase()] = operation(route);
  }
  return {
    openapi: '3.1.0',
    info: { title: TITLES[api], version },
    paths,
    components: {
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'Identity-provider access token' },
        ...(api === 'core'
          ? { agentAccessToken: { type: 'apiKey', in: 'header', name: 'X-AGENT-ACCESS-TOKEN', description: 'Agent access token' } }
          : {}),
      },
    },
  };
}
