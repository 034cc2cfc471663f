// Routes served through the Azure Functions adapter, with the library's own request type.
import functions from '@azure/functions';
import { beforeAll, describe, expect, it } from 'vitest';
import { functionTable, tableFunctions } from '../../../../functions/group-loaders.js';
import { QUEUE_HANDLERS, ROUTES, TIMERS } from '../../../../functions/groups.js';
import { loadConfig } from '../../../../shared/config.js';
import { functionsHandler, loadedFunctions, registerHost, type Registrar } from '../../../../shared/http/azure-host.js';
import { queueName } from '../../../../shared/queues/handler.js';
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
    const req = new functions.HttpRequest({
      method: 'GET',
      url: `http://localhost:7071/instances/${INSTANCE}/status`,
      params: { instanceId: INSTANCE },
    });
    const res = await functionsHandler(route('status-core-instance'), () => Promise.resolve(s))(req);
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body as string)).toMatchObject({ status: 'ready', name: 'CoreAPI', instance_id: INSTANCE });
    expect((res.headers as Record<string, string>)['x-request-id']).toBeTruthy();
  });

  it('authenticates with the same pipeline', async () => {
    const url = `http://localhost:7071/instances/${INSTANCE}/branding`;
    const handler = functionsHandler(route('branding-get'), () => Promise.resolve(s));
    const anonymous = await handler(
      new functions.HttpRequest({ method: 'GET', url, params: { instanceId: INSTANCE } }),
    );
    expect(anonymous.status).toBe(401);
    expect((anonymous.headers as Record<string, string>)['www-authenticate']).toBe('Bearer');
    const authed = await handler(
      new functions.HttpRequest({
        method: 'GET',
        url,
        params: { instanceId: INSTANCE },
        headers: { authorization: `Bearer ${await s.token()}` },
      }),
    );
    expect(authed.status).toBe(200);
    expect(JSON.parse(authed.body as string)).toHaveProperty('company_name', 'Agent Platform');
  });

  it('registers every route under its own name and its documented path, with no /api prefix', async () => {
    const { readFile } = await import('node:fs/promises');
    const host = JSON.parse(await readFile('host.json', 'utf8')) as { extensions: { http: { routePrefix: string } } };
    expect(host.extensions.http.routePrefix).toBe('');
    expect(new Set(ROUTES.map((r) => r.name)).size).toBe(ROUTES.length);
  });

  /**
   * What a host registers for SERVICE_APIS=apis, from the groups as they are or (`table`) from the bundle's function
   * table.
   */
  async function registered(apis: string, table = false) {
    const http: {
      name: string;
      methods: string[];
      route: string;
      handler: (req: functions.HttpRequest) => Promise<functions.HttpResponseInit>;
    }[] = [];
    const queues: string[] = [];
    const timers: string[] = [];
    const queueHandlers = new Map<string, functions.StorageQueueHandler>();
    const registrar = {
      http: (name: string, o: functions.HttpFunctionOptions) =>
        http.push({
          name,
          methods: o.methods ?? [],
          route: o.route ?? '',
          handler: o.handler as (typeof http)[number]['handler'],
        }),
      storageQueue: (name: string, o: functions.StorageQueueFunctionOptions) => {
        queues.push(`${name} ${o.queueName}`);
        queueHandlers.set(name, o.handler);
      },
      timer: (name: string, o: { schedule: string }) => timers.push(`${name} ${o.schedule}`),
    } as unknown as Registrar;
    const config = loadConfig({ SERVICE_APIS: apis });
    const services = () => Promise.resolve(s);
    if (table) registerHost(tableFunctions(await functionTable()), { config, services, app: registrar });
    else registerHost(loadedFunctions(ROUTES, QUEUE_HANDLERS, TIMERS), { config, services, app: registrar });
    return { http, queues, timers, queueHandlers, config };
  }

  it.each(['core', 'management', 'core,management'])(
    'registers every (method, route) pair and every function name once, for SERVICE_APIS=%s',
    async (apis) => {
      const { http, queues, timers, config } = await registered(apis);

      const pairs = http.flatMap((f) => f.methods.map((m) => `${m} /${f.route.toLowerCase()}`));
      expect(pairs.length).toBe(new Set(pairs).size);
      const names = http.map((f) => f.name.toLowerCase());
      expect(names.length).toBe(new Set(names).size);
      for (const f of http) expect(f.name).toMatch(/^[A-Za-z][A-Za-z0-9_-]{0,127}$/);
      // Every route of the APIs served is reachable at its path.
      for (const r of ROUTES.filter((x) => config.serviceApis.includes(x.api)))
        expect(pairs).toContain(`${r.method} ${r.path.toLowerCase()}`);
      expect(queues).toEqual(
        config.serviceApis.includes('core') ? QUEUE_HANDLERS.map((q) => `${q.name} ${queueName(config, q.queue)}`) : [],
      );
      if (config.serviceApis.includes('core')) expect(queues).toContain('completions-poison async-completions-poison');
      // Scheduled pipelines: a timer each minute beside the queue triggers.
      expect(timers).toEqual(config.serviceApis.includes('core') ? ['data-pipelines-schedule 0 * * * * *'] : []);
    },
  );

  it(
    "registers the deployed bundle's functions from its table exactly as from the groups, each loading its " +
      'group at the first call',
    async () => {
      const table = await functionTable();
      expect(table.routes.map((r) => `${r.name} ${r.api} ${r.method} ${r.path}`)).toEqual(
        ROUTES.map((r) => `${r.name} ${r.api} ${r.method} ${r.path}`),
      );
      expect(table.queues.map((q) => q.name)).toEqual(QUEUE_HANDLERS.map((q) => q.name));
      expect(table.timers.map((t) => t.name)).toEqual(TIMERS.map((t) => t.name));
      const fromRoutes = await registered('core,management');
      const fromTable = await registered('core,management', true);
      const shape = ({ http, queues, timers }: typeof fromRoutes) => ({
        http: http.map(({ name, methods, route }) => ({ name, methods, route })),
        queues,
        timers,
      });
      expect(shape(fromTable)).toEqual(shape(fromRoutes));

      const handler = (name: string) => fromTable.http.find((f) => f.name === name)?.handler;
      const url = `http://localhost:7071/instances/${INSTANCE}/branding`;
      const anonymous = await handler('branding-get')?.(
        new functions.HttpRequest({ method: 'GET', url, params: { instanceId: INSTANCE } }),
      );
      expect(anonymous?.status).toBe(401);
      const authed = await handler('branding-get')?.(
        new functions.HttpRequest({
          method: 'GET',
          url,
          params: { instanceId: INSTANCE },
          headers: { authorization: `Bearer ${await s.token()}` },
        }),
      );
      expect(JSON.parse(authed?.body as string)).toHaveProperty('company_name', 'Agent Platform');
      // The OpenAPI document, whose group loads every other, lists every path.
      const openapi = await handler('meta-openapi-core')?.(
        new functions.HttpRequest({ method: 'GET', url: 'http://localhost:7071/openapi.json' }),
      );
      const doc = JSON.parse(openapi?.body as string) as { paths: Record<string, unknown> };
      for (const r of ROUTES.filter((x) => x.api === 'core')) expect(Object.keys(doc.paths)).toContain(r.path);
      // A queue trigger's handler loads too: a message its schema refuses is logged and dropped.
      await fromTable.queueHandlers.get('webhooks-deliver')?.(
        { not: 'a delivery' },
        new functions.InvocationContext({ triggerMetadata: { id: 'm-1', dequeueCount: 1 } }),
      );
      expect(s.log.records.find((r) => r.message.startsWith('Queue message dropped'))?.fields).toMatchObject({
        handler: 'webhooks-deliver',
        id: 'm-1',
      });
    },
  );

  it("gives a host with both APIs the Management API's OpenAPI document at /openapi.json?api=management", async () => {
    const r = await functionsHandler(route('meta-openapi-core'), () => Promise.resolve(s))(
      new functions.HttpRequest({ method: 'GET', url: 'http://localhost:7071/openapi.json?api=management' }),
    );
    const doc = JSON.parse(r.body as string) as { info: { title: string }; paths: Record<string, unknown> };
    expect(doc.info.title).toBe('Agent Platform Management API');
    expect(Object.keys(doc.paths)).toContain('/instances/{instanceId}/identity');
  });
});
