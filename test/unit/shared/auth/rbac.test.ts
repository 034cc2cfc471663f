// Role-based authorization on its own: which assignment grants which action where, over a real store.
import { beforeEach, describe, expect, it } from 'vitest';
import { normalizeScope, RoleBasedAuthorizer } from '../../../../shared/auth/rbac.js';
import { ROLE_IDS } from '../../../../shared/providers/types/roles.js';
import {
  type RoleAssignmentDoc,
  roleAssignments,
  serviceAssignment,
} from '../../../../shared/providers/types/authorization.js';
import { openSqliteStore } from '../../../../shared/store/sqlite-store.js';
import type { Container } from '../../../../shared/store/types.js';
import { user } from '../../../support/resources.js';
import { resourcesOf } from '../../../../shared/providers/types/resource-type.js';

const INSTANCE = 'instance-1';
const at = (path = '') => `/instances/${INSTANCE}${path}`;
const AGENT = at('/providers/Svc.Agent/agents/helper');

describe('role-based authorization', () => {
  let assignments: Container<RoleAssignmentDoc>;
  let authorizer: RoleBasedAuthorizer;
  let n = 0;
  const assign = (
    principalId: string,
    roleId: string,
    scope: string,
    principalType: RoleAssignmentDoc['principal_type'] = 'User',
  ) =>
    assignments
      .upsert(
        serviceAssignment(INSTANCE, `a-${++n}`, {
          principalId,
          principalType,
          roleId,
          scope,
          note: 'test',
          by: 'test',
        }),
      )
      .then(() => authorizer.invalidate());

  beforeEach(() => {
    assignments = resourcesOf(openSqliteStore(':memory:'), roleAssignments);
    authorizer = new RoleBasedAuthorizer(assignments, INSTANCE);
  });

  it('grants a Reader on an agent that agent and below, to read only', async () => {
    const alice = user('alice@example.com');
    await assign(alice.id, ROLE_IDS.reader, AGENT);
    expect(await authorizer.can(alice, 'Svc.Agent/agents/read', AGENT)).toBe(true);
    expect(await authorizer.can(alice, 'Svc.Agent/agents/read', `${AGENT}/agentAccessTokens/t1`)).toBe(true);
    expect(await authorizer.can(alice, 'Svc.Agent/agents/write', AGENT)).toBe(false);
    expect(await authorizer.can(alice, 'Svc.Agent/agents/read', at('/providers/Svc.Agent/agents/other'))).toBe(false);
    // A sibling whose name starts the same is another resource.
    expect(await authorizer.can(alice, 'Svc.Agent/agents/read', `${AGENT}-2`)).toBe(false);
  });

  it('compares scopes without case, and reads relative scopes from the instance', async () => {
    const bob = user('bob@example.com');
    await assign(bob.id.toUpperCase(), ROLE_IDS.contributor, 'providers/Svc.Agent/agents/HELPER/');
    expect(normalizeScope('providers/Svc.Agent/agents/HELPER/', INSTANCE)).toBe(
      at('/providers/Svc.Agent/agents/HELPER'),
    );
    expect(await authorizer.can(bob, 'Svc.Agent/agents/write', AGENT)).toBe(true);
  });

  it('grants through a group the principal belongs to, and stops when the assignment is deleted', async () => {
    const carol = { ...user('carol@example.com'), groups: ['group-1'] };
    await assign('group-1', ROLE_IDS.owner, at(), 'Group');
    expect(await authorizer.can(carol, 'Svc.Prompt/prompts/delete', at('/providers/Svc.Prompt/prompts/p'))).toBe(true);
    const [only] = (await assignments.query({})).items;
    if (!only) throw new Error('no assignment stored');
    await assignments.upsert({ ...only, deleted: true });
    authorizer.invalidate();
    expect(await authorizer.can(carol, 'Svc.Prompt/prompts/delete', at('/providers/Svc.Prompt/prompts/p'))).toBe(false);
  });

  it('keeps analytics from Owners: only the Analytics Reader role runs them', async () => {
    const dana = user('dana@example.com');
    await assign(dana.id, ROLE_IDS.owner, at());
    expect(await authorizer.can(dana, 'Svc.Analytics/analytics/read', at())).toBe(false);
    await assign(dana.id, ROLE_IDS.analyticsReader, at());
    expect(await authorizer.can(dana, 'Svc.Analytics/analytics/read', at())).toBe(true);
  });

  it('answers a principal with no assignment 403 on require, naming the action', async () => {
    await expect(authorizer.require(user('eve@example.com'), 'Svc.Agent/agents/read', AGENT)).rejects.toMatchObject({
      kind: 'forbidden',
    });
  });

  it('lists the roles and the allowed actions of a principal at a resource', async () => {
    const frank = user('frank@example.com');
    await assign(frank.id, ROLE_IDS.reader, at());
    const access = await authorizer.access(frank, AGENT, ['Svc.Agent/agents/read', 'Svc.Agent/agents/write']);
    expect(access.actions).toEqual(['Svc.Agent/agents/read']);
    expect(access.roles).toEqual(['Reader']);
  });
});
