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

  it.each(['core', 'management'] as const)('serves a valid %s document without authentication, covering every route', async (api) => {
    const r = await call(ROUTES, s, { api, path: '/openapi.json' });
    expect(r.status).toBe(200);
    const doc = r.json as { openapi: string; paths: Record<string, Record<string, { operationId: string; security: unknown[] }>> };
    const result = await new Validator().validate(doc);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(doc.openapi).toBe('3.1.0');
    const operations = Object.values(doc.paths).flatMap((p) => Object.values(p).map((o) => o.operationId));
    expect(operations.sort()).toEqual(ROUTES.filter((route) => route.api === api).map((route) => route.name).sort());
  });

  it('documents the auth schemes and error envelopes of each route', async () => {
    const doc = (await call(ROUTES, s, { api: 'core', path: '/openapi.json' })).json as {
      paths: Record<string, Record<string, { security: unknown[]; responses: Record<string, { content?: Record<string, { schema: { properties?: object } }> }> }>>;
    };
    const branding = doc.paths['/instances/{instanceId}/branding']?.get;
    expect(branding?.security).toEqual([{ bearerAuth: [] }, { agentAccessToken: [] }]);
    expect(Object.keys(branding?.responses ?? {})).toEqual(expect.arrayContaining(['200', '401', '403', '404', '500']));
    expect(branding?.responses['401']?.content?.['application/json']?.schema).toEqual({ $ref: '#/components/schemas/CoreError' });
    expect(doc.paths['/status']?.get?.security).toEqual([]);
  });
});
