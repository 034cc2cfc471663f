// Self-description: the OpenAPI document of each API, and the local identity provider's JWKS.
import { z } from 'zod';
import { notFound } from '../shared/errors.js';
import { buildOpenApi } from '../shared/http/openapi.js';
import { defineRoute, type Route } from '../shared/http/route.js';
import { json, type Api } from '../shared/http/types.js';

const OpenApiDocument = z.record(z.string(), z.unknown());
type OpenApiDocument = z.output<typeof OpenApiDocument>;
const Jwks = z.object({ keys: z.array(z.record(z.string(), z.unknown())) });

/** Routes that describe the whole table, given lazily to avoid an import cycle. */
export function metaRoutes(all: () => readonly Route[]): Route[] {
  const documents = new Map<Api, OpenApiDocument>();
  const openApi = (api: Api) =>
    defineRoute({
      name: `meta-openapi-${api}`,
      api,
      method: 'GET',
      path: '/openapi.json',
      summary: 'OpenAPI document of this API',
      tag: 'Meta',
      auth: 'none',
      errors: api,
      query: z.object({
        api: z
          .enum(['core', 'management'])
          .optional()
          .describe("Another API's document: a host that serves both answers /openapi.json with the Core API's route"),
      }),
      responses: { 200: { description: 'OpenAPI 3.1 document', schema: OpenApiDocument } },
      handler: ({ services, query }) => {
        const which = query.api ?? api;
        let doc = documents.get(which);
        if (!doc) {
          const port = which === 'core' ? services.config.corePort : services.config.managementPort;
          doc = buildOpenApi(which, all(), {
            version: services.config.version,
            servers: [
              { url: '/', description: 'The host that serves this document' },
              { url: `http://localhost:${port}`, description: 'npm start on this machine' },
            ],
          });
          documents.set(which, doc);
        }
        return Promise.resolve(json(200, doc, { 'cache-control': 'public, max-age=300' }));
      },
    });
  return [
    openApi('core'),
    openApi('management'),
    defineRoute({
      name: 'meta-jwks',
      api: 'core',
      method: 'GET',
      path: '/.well-known/jwks.json',
      summary: 'Signing keys of the local identity provider (only when no AUTH_* setting is given)',
      tag: 'Meta',
      auth: 'none',
      errors: 'core',
      responses: {
        200: {
          description: 'JSON Web Key Set',
          schema: Jwks,
        },
      },
      handler: ({ services }) => {
        if (!services.bearer.localJwks) throw notFound('The local identity provider is not in use');
        // Parsed: the verifier holds its keys as unknown values, the answer says each is an object.
        const jwks = Jwks.parse(services.bearer.localJwks);
        return Promise.resolve(json(200, jwks, { 'cache-control': 'public, max-age=300' }));
      },
    }),
  ];
}
