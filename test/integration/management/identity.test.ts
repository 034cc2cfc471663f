// Identity endpoints over HTTP, and principal search through Microsoft Graph against a loopback server.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isPrincipal, PrincipalDirectory } from '../../../shared/auth/directory.js';
import { LOCAL_DEFAULT_USER, oidForUpn } from '../../../shared/auth/local-idp.js';
import { ROLE_IDS, roleDefinitionPath } from '../../../shared/providers/types/roles.js';
import { openSqliteStore } from '../../../shared/store/sqlite-store.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { INSTANCE } from '../../support/services.js';
import { narrowed } from '../../../shared/store/narrowed.js';
import { resourcesOf } from '../../../shared/providers/types/resource-type.js';
import { roleAssignments } from '../../../shared/providers/types/authorization.js';

describe('identity', () => {
  let app: TestApp;
  const identity = () => `${app.management}/instances/${INSTANCE}/identity`;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app.close());

  it('returns the caller with its groups and role assignments', async () => {
    const r = await app.call('GET', identity());
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      id: LOCAL_DEFAULT_USER.oid,
      upn: LOCAL_DEFAULT_USER.upn,
      principal_type: 'User',
      group_ids: [],
      role_assignments: [{ role_name: 'Owner', scope: `/instances/${INSTANCE}`, principal_id: LOCAL_DEFAULT_USER.oid }],
    });
  });

  it('finds principals seen signing in and groups in role assignments, not for callers without rights', async () => {
    await app.call('GET', identity(), { as: 'alice.search@example.com' });
    const group = randomUUID();
    const name = randomUUID();
    await app.call(
      'POST',
      `${app.management}/instances/${INSTANCE}/providers/Svc.Authorization/roleAssignments/${name}`,
      {
        body: {
          name,
          principal_id: group,
          principal_type: 'Group',
          role_definition_id: roleDefinitionPath(ROLE_IDS.reader),
          scope: `/instances/${INSTANCE}`,
        },
      },
    );
    // The sign-in is recorded off the request path: give it a moment.
    await new Promise((r) => setTimeout(r, 100));
    const users = await app.call('GET', `${identity()}/securityPrincipals?search=ALICE.SEARCH`);
    expect(users).toMatchObject({
      status: 200,
      body: [{ id: oidForUpn('alice.search@example.com'), principal_type: 'User', upn: 'alice.search@example.com' }],
    });
    const groups = await app.call('GET', `${identity()}/securityPrincipals?search=${group.slice(0, 13)}`);
    expect(groups.body).toEqual([{ id: group, principal_type: 'Group', upn: null, display_name: null, email: null }]);
    expect((await app.call('GET', `${identity()}/securityPrincipals`)).status).toBe(400);
    expect(
      (await app.call('GET', `${identity()}/securityPrincipals?search=a`, { as: 'nobody@example.com' })).status,
    ).toBe(403);
  });
});

describe('principal search through Microsoft Graph', () => {
  it('asks Graph for users and groups with the managed identity token and maps the answers', async () => {
    const seen: { url: string; auth: string | undefined; consistency: string | undefined }[] = [];
    const graph = http.createServer((req, res) => {
      seen.push({
        url: req.url ?? '',
        auth: req.headers.authorization,
        consistency: req.headers.consistencylevel as string | undefined,
      });
      const value = req.url?.startsWith('/v1.0/users')
        ? [{ id: 'u1', displayName: 'Dana Scully', userPrincipalName: 'dana@contoso.com', mail: 'dana@contoso.com' }]
        : [{ id: 'g1', displayName: 'Dana fans' }];
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ value }));
    });
    await new Promise<void>((r) => graph.listen(0, '127.0.0.1', r));
    const store = openSqliteStore(':memory:');
    const directory = new PrincipalDirectory(
      narrowed(store.container('principals'), isPrincipal),
      resourcesOf(store, roleAssignments),
      {
        graph: {
          baseUrl: `http://127.0.0.1:${(graph.address() as AddressInfo).port}`,
          getToken: () => Promise.resolve('graph-token'),
        },
      },
    );
    const found = await directory.search('dana');
    graph.close();
    expect(found).toEqual([
      {
        id: 'u1',
        principal_type: 'User',
        upn: 'dana@contoso.com',
        display_name: 'Dana Scully',
        email: 'dana@contoso.com',
      },
      { id: 'g1', principal_type: 'Group', upn: null, display_name: 'Dana fans', email: null },
    ]);
    expect(seen.map((s) => [s.auth, s.consistency])).toEqual([
      ['Bearer graph-token', 'eventual'],
      ['Bearer graph-token', 'eventual'],
    ]);
    expect(decodeURIComponent(seen[0]!.url)).toContain(
      '$search="displayName:dana" OR "userPrincipalName:dana" OR "mail:dana"',
    );
  });
});
