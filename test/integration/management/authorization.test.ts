// Role-based access over HTTP: what each built-in role may do, inheritance, groups, and a bounded cost
// for lists whatever their size.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oidForUpn } from '../../../shared/auth/local-idp.js';
import { ROLE_IDS, roleDefinitionPath } from '../../../shared/providers/types/roles.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { INSTANCE } from '../../support/services.js';

const instanceScope = `/instances/${INSTANCE}`;
const agentPath = (name: string) => `${instanceScope}/providers/Svc.Agent/agents/${name}`;

describe('role-based authorization', () => {
  let app: TestApp;
  const agents = () => `${app.management}${instanceScope}/providers/Svc.Agent/agents`;
  const assignments = () => `${app.management}${instanceScope}/providers/Svc.Authorization/roleAssignments`;

  /** The owner grants `role` to `upn` (or a group) at `scope`. */
  async function assign(principal: string, role: string, scope: string, type: 'User' | 'Group' = 'User', as?: string) {
    const name = randomUUID();
    const r = await app.call('POST', `${assignments()}/${name}`, {
      ...(as ? { as } : {}),
      body: {
        name,
        principal_id: type === 'User' ? oidForUpn(principal) : principal,
        principal_type: type,
        role_definition_id: roleDefinitionPath(role),
        scope,
      },
    });
    return r.status;
  }

  beforeAll(async () => {
    app = await startTestApp();
    expect((await app.call('POST', `${agents()}/shared-agent`, { body: { name: 'shared-agent' } })).status).toBe(200);
  });
  afterAll(() => app.close());

  it('gives a caller with no role 403 on get and write, and an empty list', async () => {
    const as = 'norole@example.com';
    expect((await app.call('GET', `${agents()}/shared-agent`, { as })).status).toBe(403);
    expect((await app.call('POST', `${agents()}/mine`, { as, body: { name: 'mine' } })).status).toBe(403);
    expect((await app.call('DELETE', `${agents()}/shared-agent`, { as })).status).toBe(403);
    expect(await app.call('GET', agents(), { as })).toMatchObject({ status: 200, body: [] });
    const forbidden = await app.call('GET', `${agents()}/shared-agent`, { as });
    expect(forbidden.body).toMatchObject({ error: { code: 'Forbidden' } });
  });

  it('lets a Reader read but not write', async () => {
    const as = 'reader@example.com';
    expect(await assign(as, ROLE_IDS.reader, instanceScope)).toBe(200);
    const got = await app.call('GET', `${agents()}/shared-agent`, { as });
    expect(got).toMatchObject({ status: 200, body: { roles: ['Reader'], actions: ['Svc.Agent/agents/read'] } });
    expect((await app.call('GET', agents(), { as })).body).toHaveLength(1);
    expect(
      (
        await app.call('POST', `${agents()}/shared-agent`, {
          as,
          body: { name: 'shared-agent', description: 'changed' },
        })
      ).status,
    ).toBe(403);
    expect((await app.call('DELETE', `${agents()}/shared-agent`, { as })).status).toBe(403);
  });

  it('lets a Contributor write but not assign roles', async () => {
    const as = 'contributor@example.com';
    expect(await assign(as, ROLE_IDS.contributor, instanceScope)).toBe(200);
    expect((await app.call('POST', `${agents()}/contrib-agent`, { as, body: { name: 'contrib-agent' } })).status).toBe(
      200,
    );
    expect(await assign('someone@example.com', ROLE_IDS.reader, instanceScope, 'User', as)).toBe(403);
  });

  it('lets a User Access Administrator assign roles', async () => {
    const as = 'uaa@example.com';
    expect(await assign(as, ROLE_IDS.userAccessAdministrator, instanceScope)).toBe(200);
    expect(await assign('granted@example.com', ROLE_IDS.reader, agentPath('shared-agent'), 'User', as)).toBe(200);
    expect((await app.call('GET', `${agents()}/shared-agent`, { as: 'granted@example.com' })).status).toBe(200);
    // ...but it writes no other resources.
    expect((await app.call('POST', `${agents()}/uaa-agent`, { as, body: { name: 'uaa-agent' } })).status).toBe(403);
  });

  it('makes the creator of an agent its Owner, and inherits assignments downward only', async () => {
    const as = 'creator@example.com';
    expect(await assign(as, ROLE_IDS.contributor, instanceScope)).toBe(200);
    await app.call('POST', `${agents()}/created-agent`, { as, body: { name: 'created-agent' } });
    const got = await app.call('GET', `${agents()}/created-agent`, { as });
    expect((got.body as { roles: string[] }).roles).toEqual(['Contributor', 'Owner']);
    // A role on one agent says nothing about its siblings.
    const scoped = 'scoped@example.com';
    expect(await assign(scoped, ROLE_IDS.reader, agentPath('created-agent'))).toBe(200);
    expect((await app.call('GET', `${agents()}/created-agent`, { as: scoped })).status).toBe(200);
    expect((await app.call('GET', `${agents()}/shared-agent`, { as: scoped })).status).toBe(403);
  });

  it('matches role assignments by group ids from the token', async () => {
    const group = randomUUID();
    expect(await assign(group, ROLE_IDS.reader, agentPath('shared-agent'), 'Group')).toBe(200);
    const token = await app.token('member@example.com', { groups: [group] });
    const r = await fetch(`${agents()}/shared-agent`, { headers: { authorization: `Bearer ${token}` } });
    expect(r.status).toBe(200);
  });

  it('rejects a role assignment with an unknown role or a scope outside the instance', async () => {
    const name = randomUUID();
    const unknownRole = await app.call('POST', `${assignments()}/${name}`, {
      body: {
        name,
        principal_id: 'p',
        principal_type: 'User',
        role_definition_id: roleDefinitionPath(randomUUID()),
        scope: instanceScope,
      },
    });
    expect(unknownRole.status).toBe(400);
    expect(JSON.stringify(unknownRole.body)).toContain('role_definition_id');
    const elsewhere = await app.call('POST', `${assignments()}/${name}`, {
      body: {
        name,
        principal_id: 'p',
        principal_type: 'User',
        role_definition_id: roleDefinitionPath(ROLE_IDS.reader),
        scope: '/instances/other',
      },
    });
    expect(elsewhere.status).toBe(400);
  });

  it('takes effect at once after a role assignment is deleted', async () => {
    const as = 'revoked@example.com';
    const name = randomUUID();
    await app.call('POST', `${assignments()}/${name}`, {
      body: {
        name,
        principal_id: oidForUpn(as),
        principal_type: 'User',
        role_definition_id: roleDefinitionPath(ROLE_IDS.reader),
        scope: instanceScope,
      },
    });
    expect((await app.call('GET', `${agents()}/shared-agent`, { as })).status).toBe(200);
    expect((await app.call('DELETE', `${assignments()}/${name}`)).status).toBe(200);
    expect((await app.call('GET', `${agents()}/shared-agent`, { as })).status).toBe(403);
  });

  it('lists 10 of 1,000 agents for a Reader of those 10, with a bounded number of store reads', async () => {
    const container = app.services.store.container('resources');
    const now = new Date().toISOString();
    for (let i = 0; i < 1000; i++) {
      const name = `bulk-${String(i).padStart(4, '0')}`;
      await container.create({
        id: name,
        pk: 'Svc.Agent/agents',
        type: 'agent',
        name,
        object_id: agentPath(name),
        created_on: now,
        created_by: 'seed',
        updated_on: now,
        updated_by: 'seed',
        deleted: false,
      });
    }
    const as = 'ten@example.com';
    const granted = Array.from({ length: 10 }, (_, i) => `bulk-${String(i * 97).padStart(4, '0')}`);
    for (const name of granted) expect(await assign(as, ROLE_IDS.reader, agentPath(name))).toBe(200);

    app.store.reset();
    const r = await app.call('GET', agents(), { as });
    expect(r.status).toBe(200);
    expect((r.body as { resource: { name: string } }[]).map((e) => e.resource.name).sort()).toEqual(granted.sort());
    const resources = app.store.counts.get('resources');
    // The agents are read 1,000 at a time (a little over 1,000 exist: two queries), and the role
    // assignments at most once (then cached).
    expect((resources?.queries ?? 0) + (resources?.reads ?? 0)).toBeLessThanOrEqual(3);

    app.store.reset();
    await app.call('GET', agents(), { as });
    expect(app.store.counts.get('resources')).toEqual({ reads: 0, queries: 2, writes: 0 });
  });
});
