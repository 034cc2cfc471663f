// The OpenAPI documents are generated from the route table and must be valid OpenAPI 3.1.
import { Validator } from '@seriousme/openapi-schema-validator';
import { beforeAll, describe, expect, it } from 'vitest';
import { ROUTES } from '../../../../functions/groups.js';
import { call } from '../../../support/requests.js';
import { testServices, type TestServices } from '../../../support/services.js';

describe('OpenAPI documents', () => {
  let s: TestServices;
  beforeAll(async () => {
    s = await testServices();
  });

  it.each(['core', 'management'] as const)(
    'serves a valid %s document without authentication, covering every route',
    async (api) => {
      const r = await call(ROUTES, s, { api, path: '/openapi.json' });
      expect(r.status).toBe(200);
      const doc = r.json as {
        openapi: string;
        paths: Record<string, Record<string, { operationId: string; security: unknown[] }>>;
      };
      const result = await new Validator().validate(doc);
      expect(result.errors ?? []).toEqual([]);
      expect(result.valid).toBe(true);
      expect(doc.openapi).toBe('3.1.0');
      const operations = Object.values(doc.paths).flatMap((p) => Object.values(p).map((o) => o.operationId));
      expect(operations.sort()).toEqual(
        ROUTES.filter((route) => route.api === api)
          .map((route) => route.name)
          .sort(),
      );
    },
  );

  it('documents the auth schemes and error envelopes of each route', async () => {
    const doc = (await call(ROUTES, s, { api: 'core', path: '/openapi.json' })).json as {
      paths: Record<
        string,
        Record<
          string,
          {
            security: unknown[];
            responses: Record<string, { content?: Record<string, { schema: { properties?: object } }> }>;
          }
        >
      >;
    };
    const branding = doc.paths['/instances/{instanceId}/branding']?.get;
    expect(branding?.security).toEqual([{ bearerAuth: [] }, { agentAccessToken: [] }]);
    expect(Object.keys(branding?.responses ?? {})).toEqual(expect.arrayContaining(['200', '401', '403', '404', '500']));
    expect(branding?.responses['401']?.content?.['application/json']?.schema).toEqual({
      $ref: '#/components/schemas/CoreError',
    });
    expect(doc.paths['/status']?.get?.security).toEqual([]);
  });

  it('documents what generated clients need: streaming, each error status, multipart, headers, servers', async () => {
    type Op = {
      requestBody?: {
        content: Record<string, { schema: { $ref?: string; properties?: Record<string, { format?: string }> } }>;
      };
      responses: Record<
        string,
        { content?: Record<string, { schema: { $ref?: string } }>; headers?: Record<string, unknown> }
      >;
    };
    const core = (await call(ROUTES, s, { api: 'core', path: '/openapi.json' })).json as {
      servers: { url: string }[];
      paths: Record<string, Record<string, Op>>;
    };
    const management = (await call(ROUTES, s, { api: 'management', path: '/openapi.json' })).json as {
      paths: Record<string, Record<string, Op>>;
    };
    expect(core.servers[0]?.url).toBe('/');

    const completion = core.paths['/instances/{instanceId}/completions']!.post!;
    expect(Object.keys(completion.responses['200']!.content!)).toEqual(['application/json', 'text/event-stream']);
    expect(Object.keys(completion.responses['200']!.headers!)).toEqual([
      'RateLimit',
      'RateLimit-Policy',
      'x-operation-id',
    ]);
    for (const status of ['502', '503', '504'])
      expect(completion.responses[status]?.content?.['application/json']?.schema).toEqual({
        $ref: '#/components/schemas/CoreError',
      });
    expect(completion.responses['429']?.content?.['application/json']?.schema).toEqual({
      $ref: '#/components/schemas/QuotaResponse',
    });
    expect(completion.responses['413']).toBeDefined();

    const started = core.paths['/instances/{instanceId}/async-completions']!.post!.responses['202']!;
    expect(Object.keys(started.headers!)).toEqual(expect.arrayContaining(['Location', 'Retry-After']));

    const upload = core.paths['/instances/{instanceId}/files/upload']!.post!;
    expect(upload.requestBody?.content['multipart/form-data']?.schema.properties?.file?.format).toBe('binary');
    expect(upload.responses['413']?.content?.['application/json']?.schema).toEqual({
      $ref: '#/components/schemas/CoreError',
    });

    const pkg = management.paths['/instances/{instanceId}/providers/Svc.Platform/pluginPackages/{packageName}']!;
    expect(Object.keys(pkg.post!.requestBody!.content)).toEqual(['multipart/form-data', 'application/json']);
    expect(pkg.post!.responses['200']?.content?.['application/json']).toBeDefined();
    expect(Object.keys(pkg.get!.responses['200']!.content!)).toEqual([
      'application/json',
      'application/zip',
      'application/octet-stream',
    ]);
    const analytics = management.paths['/instances/{instanceId}/providers/Svc.Analytics/analytics/query']!.post!;
    expect(JSON.stringify(analytics.responses['200'])).toContain('#/components/schemas/AnalyticsResponse');
  });
});
