// Routes served through the Azure Functions adapter, with the library's own request type.
import functions from '@azure/functions';
import { beforeAll, describe, expect, it } from 'vitest';
import { ROUTES } from '../../../../functions/groups.js';
import { functionsHandler } from '../../../../shared/http/azure-host.js';
import { INSTANCE, testServices, type TestServices } from '../../../support/services.js';

const route = (name: string) => {
  const r = ROUTES.find((x) => x.name === name);
  if (!r) throw new Error(name);
  return r;
};

describe('Azure Functions adapter', () => {
  let s: TestServices;
  beforeAll(async () => {
    s = await testServices();
  });

  it('answers status through a Functions HttpRequest', async () => {
    const req = new functions.HttpRequest({ method: 'GET', url: `http://localhost:7071/instances/${INSTANCE}/status`, params: { instanceId: INSTANCE } });
    const res = await functionsHandler(route('status-core-instance'), () => Promise.resolve(s))(req);
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body as string)).toMatchObject({ status: 'ready', name: 'CoreAPI', instance_id: INSTANCE });
    expect((res.headers as Record<string, string>)['x-request-id']).toBeTruthy();
  });

  it('authenticates with the same pipeline', async () => {
    const url = `http://localhost:7071/instances/${INSTANCE}/branding`;
    const handler = functionsHandler(route('branding-get'), () => Promise.resolve(s));
    const anonymous = await handler(new functions.HttpRequest({ method: 'GET', url, params: { instanceId: INSTANCE } }));
    expect(anonymous.status).toBe(401);
    expect((anonymous.headers as Record<string, string>)['www-authenticate']).toBe('Bearer');
    const authed = await handler(
      new functions.HttpRequest({ method: 'GET', url, params: { instanceId: INSTANCE }, headers: { authorization: `Bearer ${await s.token()}` } }),
    );
    expect(authed.status).toBe(200);
    expect(JSON.parse(authed.body as string)).toHaveProperty('company_name', 'Agent Platform');
  });

  it('registers every route under its own name and the spec path, with no /api prefix', async () => {
    const { readFile } = await import('node:fs/promises');
    const host = JSON.parse(await readFile('host.json', 'utf8')) as { extensions: { http: { routePrefix: string } } };
    expect(host.extensions.http.routePrefix).toBe('');
    expect(new Set(ROUTES.map((r) => r.name)).size).toBe(ROUTES.length);
  });
});
