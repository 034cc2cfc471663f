// `npm start` and `npm run token` as a user runs them: the bundle `npm run build` makes (built afresh by
// the suite's global setup), both APIs over HTTP, tokens, the embedded store's worker threads, and a restart.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { freePort } from '../../scripts/azurite.js';
import { LOCAL_DEFAULT_USER } from '../../shared/auth/local-idp.js';
import { ROLE_IDS, roleDefinitionPath } from '../../shared/providers/types/roles.js';
import { resourceId } from '../../shared/providers/types/resource-type.js';
import { openSqliteStore } from '../../shared/store/sqlite-store.js';
import { runScript, startBuilt, type Running } from '../support/processes.js';
import { INSTANCE, tempDir } from '../support/services.js';
import { rawContainer } from '../support/raw-container.js';
import type { SettingDoc } from '../../shared/providers/settings.js';

describe('npm start', () => {
  let env: Record<string, string>;
  let app: Running;
  let core: string;
  let management: string;

  beforeAll(async () => {
    const [corePort, managementPort] = [await freePort(), await freePort()];
    env = {
      DATA_DIR: tempDir(),
      CORE_PORT: String(corePort),
      MANAGEMENT_PORT: String(managementPort),
      AzureWebJobsStorage: inject('storageConnectionString'),
    };
    core = `http://127.0.0.1:${corePort}`;
    management = `http://127.0.0.1:${managementPort}`;
    app = await startBuilt(env, /Get a token/);
  }, 60_000);
  afterAll(() => app.stop());

  it('prints both URLs and the instance id', () => {
    expect(app.output()).toContain(`Core API:        ${core}`);
    expect(app.output()).toContain(`Management API:  ${management}`);
    expect(app.output()).toContain(`Instance id:     ${INSTANCE}`);
  });

  it('prints the portal link with the sign-in code in its fragment, which the development sign-in takes', async () => {
    const link = /Portals: +(http:\S+\/portal\/#sign-in=(\S+)) \(chat\)/.exec(app.output());
    expect(link?.[1]).toBe(`${core}/portal/#sign-in=${link?.[2]}`);
    expect(app.output()).toContain(`${core}/portal/manage.html#sign-in=${link?.[2]} (management)`);
    const signIn = (body: Record<string, string>) =>
      fetch(`${core}/portal/local-sign-in`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: core },
        body: JSON.stringify({ upn: LOCAL_DEFAULT_USER.upn, ...body }),
      });
    expect((await signIn({ code: link?.[2] ?? '' })).status).toBe(200);
    // The Origin alone, which any process on the machine may send, is not enough.
    const refused = await signIn({});
    expect(refused.status).toBe(403);
    expect(await refused.text()).not.toContain('access_token');
  });

  it('answers both status endpoints with their documented fields', async () => {
    for (const [url, name] of [
      [`${core}/status`, 'CoreAPI'],
      [`${core}/instances/${INSTANCE}/status`, 'CoreAPI'],
      [`${management}/status`, 'ManagementAPI'],
    ] as const) {
      const r = await fetch(url);
      expect(r.status).toBe(200);
      expect(r.headers.get('x-request-id')).toBeTruthy();
      expect(await r.json()).toEqual({
        status: 'ready',
        name,
        version: expect.any(String) as string,
        instance_id: INSTANCE,
      });
    }
  });

  it('accepts a token from npm run token, and 401s without one', async () => {
    const { code, stdout } = await runScript('token', [], env);
    expect(code).toBe(0);
    const token = stdout.trim();
    expect(token.split('.')).toHaveLength(3);
    const ok = await fetch(`${core}/instances/${INSTANCE}/branding`, { headers: { authorization: `Bearer ${token}` } });
    expect(ok.status).toBe(200);
    const anonymous = await fetch(`${core}/instances/${INSTANCE}/branding`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toBe('Bearer');
  });

  it('answers unknown paths and methods in the API envelope', async () => {
    const r = await fetch(`${management}/nothing`);
    expect(r.status).toBe(404);
    expect(await r.json()).toMatchObject({ error: { code: 'NotFound' } });
    const m = await fetch(`${core}/status`, { method: 'DELETE' });
    expect(m.status).toBe(405);
    expect(m.headers.get('allow')).toBe('GET');
  });

  it("runs the embedded store's aggregate queries on the bundle's reader threads", async () => {
    const token = (await runScript('token', [], env)).stdout.trim();
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const name = randomUUID();
    const grant = {
      name,
      principal_id: LOCAL_DEFAULT_USER.oid,
      principal_type: 'User',
      role_definition_id: roleDefinitionPath(ROLE_IDS.analyticsReader),
      scope: `/instances/${INSTANCE}`,
    };
    const granted = await fetch(
      `${management}/instances/${INSTANCE}/providers/Svc.Authorization/roleAssignments/${name}`,
      { method: 'POST', headers, body: JSON.stringify(grant) },
    );
    expect(granted.status).toBeLessThan(300);
    const overview = await fetch(
      `${management}/instances/${INSTANCE}/providers/Svc.Analytics/analytics/query?api-version=2024-02-16`,
      { method: 'POST', headers, body: JSON.stringify({ request_type: 0 }) },
    );
    expect(overview.status).toBe(200);
    expect(await overview.json()).toMatchObject({ is_success: true, resource: { data: { active_users: 0 } } });
  });

  it('keeps stored data and the signing key across a restart', async () => {
    const token = (await runScript('token', ['--upn', 'carol@example.com'], env)).stdout.trim();
    await app.stop();
    // Written while the service is down, straight into its embedded store file.
    const store = openSqliteStore(`${env.DATA_DIR}/store.db`);
    await rawContainer<SettingDoc>(store, 'resources').upsert({
      id: resourceId('Svc:Branding:CompanyName'),
      pk: 'Svc.Configuration/appConfigurations',
      key: 'Svc:Branding:CompanyName',
      value: 'Contoso',
    });
    await store.close();
    app = await startBuilt(env, /Get a token/);
    const r = await fetch(`${core}/instances/${INSTANCE}/branding`, { headers: { authorization: `Bearer ${token}` } });
    expect(r.status).toBe(200);
    expect(await r.json()).toMatchObject({ company_name: 'Contoso' });
  });
});
