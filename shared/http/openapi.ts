// Builds the OpenAPI 3.1 document of one API from the route table and its zod schemas.
import { z } from 'zod';
import type { Route } from './route.js';
import type { ContentDoc, ResponseDoc } from './types.js';
import { templateParams } from './route.js';
import { CoreErrorBody, ManagementErrorBody, ProblemDetailsBody } from '../schemas.js';
import type { Api } from './types.js';

type Json = Record<string, unknown>;

const TITLES: Record<Api, string> = { core: 'Agent Platform Core API', management: 'Agent Platform Management API' };

/**
 * Named schemas (those with a `meta({ id })`) of one document. zod emits them as local `$defs`; OpenAPI
 * wants them under `components.schemas`, so they are hoisted there and their references rewritten.
 * A schema whose input form differs from its output form (defaults, transforms) gets an `Input` twin.
 */
class Components {
  readonly schemas: Record<string, Json> = {};

  schemaOf(schema: z.core.$ZodType, io: 'input' | 'output'): Json {
    const {
      $defs: defs = {},
      $schema: _schema,
      ...json
    }: z.core.JSONSchema.JSONSchema = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' });
    const names = new Map<string, string>();
    for (const [id, def] of Object.entries(defs)) {
      const existing = this.schemas[id];
      const name = existing && JSON.stringify(existing) !== JSON.stringify(def) ? `${id}Input` : id;
      names.set(id, name);
    }
    const rewrite = (node: unknown): unknown => {
      if (Array.isArray(node)) return node.map(rewrite);
      return typeof node === 'object' && node !== null ? rewriteObject(node) : node;
    };
    const rewriteObject = (node: object): Json => {
      const out: Json = {};
      for (const [k, v] of Object.entries(node)) {
        out[k] =
          k === '$ref' && typeof v === 'string' && v.startsWith('#/$defs/')
            ? `#/components/schemas/${names.get(v.slice(8)) ?? v.slice(8)}`
            : rewrite(v);
      }
      return out;
    };
    for (const [id, def] of Object.entries(defs)) this.schemas[names.get(id) ?? id] = rewriteObject(def);
    return rewriteObject(json);
  }
}

function errorSchema(route: Route, c: Components): Json {
  const body =
    route.errors === 'core' ? CoreErrorBody : route.errors === 'management' ? ManagementErrorBody : ProblemDetailsBody;
  const type = route.errors === 'problem' ? 'application/problem+json' : 'application/json';
  return { [type]: { schema: c.schemaOf(body, 'output') } };
}

function parameters(route: Route, c: Components): Json[] {
  const pathShape: z.core.$ZodShape = route.params instanceof z.ZodObject ? route.params.shape : {};
  const path = templateParams(route.path).map((name) => ({
    name,
    in: 'path',
    required: true,
    schema: pathShape[name] ? c.schemaOf(pathShape[name], 'input') : { type: 'string' },
  }));
  const queryShape: z.core.$ZodShape = route.query instanceof z.ZodObject ? route.query.shape : {};
  const query = Object.entries(queryShape).map(([name, s]) => ({
    name,
    in: 'query',
    required: !z.safeParse(s, undefined).success,
    schema: c.schemaOf(s, 'input'),
    ...describedAs(s),
  }));
  return [...path, ...query];
}

/** A schema's `.describe()` text, which zod keeps in its global registry. */
function describedAs(schema: z.core.$ZodType): { description?: string } {
  const description = z.globalRegistry.get(schema)?.description;
  return description ? { description } : {};
}

/** The media types of a body: one JSON schema, or the documented list. */
const contentOf = (docs: readonly ContentDoc[], c: Components, io: 'input' | 'output'): Json =>
  Object.fromEntries(docs.map((d) => [d.contentType, { schema: c.schemaOf(d.schema, io) }]));

function responseContent(
  route: Route,
  c: Components,
  { status, doc }: { status: number; doc: ResponseDoc },
): Json | undefined {
  if (doc.content) return contentOf(doc.content, c, 'output');
  if (doc.schema)
    return contentOf([{ contentType: doc.contentType ?? 'application/json', schema: doc.schema }], c, 'output');
  return status >= 400 ? errorSchema(route, c) : undefined;
}

function operation(route: Route, c: Components): Json {
  const responses: Json = {};
  for (const [key, doc] of Object.entries(route.responses)) {
    const content = responseContent(route, c, { status: Number(key), doc });
    responses[key] = {
      description: doc.description,
      ...(content ? { content } : {}),
      ...(doc.headers
        ? {
            headers: Object.fromEntries(
              Object.entries(doc.headers).map(([name, h]) => [
                name,
                { description: h.description, schema: { type: h.type } },
              ]),
            ),
          }
        : {}),
    };
  }
  const errors = errorSchema(route, c);
  const add = (status: number, description: string) => (responses[status] ??= { description, content: errors });
  const hasBody = route.body !== undefined || route.bodyKind === 'stream';
  if (route.params || route.query || hasBody) add(400, 'Invalid request');
  if (route.auth !== 'none') add(401, 'Authentication required, or the token is invalid or expired');
  if (route.auth !== 'none') add(403, 'Not permitted');
  if (route.path.includes('{')) add(404, 'Not found');
  if (hasBody) add(413, 'The body is larger than the service accepts');
  if (route.body) add(415, 'The body was not sent as application/json');
  add(500, 'Unexpected error');

  const bodies: readonly ContentDoc[] = route.body
    ? [{ contentType: 'application/json', schema: route.body }]
    : route.bodyDoc
      ? [route.bodyDoc].flat()
      : [];
  return {
    operationId: route.name,
    summary: route.summary,
    tags: [route.tag],
    security:
      route.auth === 'none'
        ? []
        : route.auth === 'bearer'
          ? [{ bearerAuth: [] }]
          : [
              { bearerAuth: [] },
              { agentAccessToken: [] },
              ...(route.auth === 'protocol' ? [{ agentAccessTokenBearer: [] }, { apiKey: [] }] : []),
            ],
    parameters: parameters(route, c),
    ...(bodies.length > 0
      ? {
          requestBody: {
            required: route.body ? !route.body.safeParse(undefined).success : true,
            content: contentOf(bodies, c, 'input'),
          },
        }
      : {}),
    responses,
  };
}

/** The OpenAPI 3.1 document for one API; `servers` are where it is served (first: the default). */
export function buildOpenApi(
  api: Api,
  routes: readonly Route[],
  { version, servers = [] }: { version: string; servers?: readonly { url: string; description: string }[] },
): Json {
  const paths: Record<string, Json> = {};
  const components = new Components();
  for (const route of routes.filter((r) => r.api === api)) {
    (paths[route.path] ??= {})[route.method.toLowerCase()] = operation(route, components);
  }
  return {
    openapi: '3.1.0',
    info: { title: TITLES[api], version },
    ...(servers.length > 0 ? { servers } : {}),
    paths,
    components: {
      schemas: components.schemas,
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description: 'Identity-provider access token',
        },
        ...(api === 'core'
          ? {
              agentAccessToken: {
                type: 'apiKey',
                in: 'header',
                name: 'X-AGENT-ACCESS-TOKEN',
                description: 'Agent access token',
              },
              agentAccessTokenBearer: {
                type: 'http',
                scheme: 'bearer',
                description: 'Agent access token as the bearer token (OpenAI, MCP and A2A routes)',
              },
              apiKey: {
                type: 'apiKey',
                in: 'header',
                name: 'api-key',
                description:
                  'Agent access token as the api-key header (OpenAI routes, as Azure OpenAI clients send it)',
              },
            }
          : {}),
      },
    },
  };
}
