// Agent access tokens over HTTP: issue, list, validate, deactivate and activate, revoke, and the
// X-AGENT-ACCESS-TOKEN scheme with each of the six validation steps of a token.
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allAgentsGroupId } from '../../shared/auth/agent-tokens.js';
import { oidForUpn } from '../../shared/auth/local-idp.js';
import { ROLE_IDS, roleDefinitionPath } from '../../shared/providers/types/roles.js';
import { formatToken, newSecret, parseToken } from '../../shared/auth/token-format.js';
import { openSqliteStore } from '../../shared/store/sqlite-store.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { INSTANCE } from '../support/services.js';

describe('agent access tokens', () => {
  let app: TestApp;
  const agentUrl = (name: string) => `${app.management}/instances/${INSTANCE}/providers/Svc.Agent/agents/${name}`;
  const tokensUrl = (name: string) => `${agentUrl(name)}/agent-access-tokens`;
  const tokens = () => app.services.store.container('tokens');

  async function issue(agent: string, body: Record<string, unknown> = {}) {
    const r = await app.call('POST', tokensUrl(agent), {
      body: { type: 'agent-access-token', name: `t-${randomUUID().slice(0, 8)}`, ...body },
    });
    expect(r.status).toBe(200);
    return r.body as { object_id: string; resource_object_id: null; is_success: boolean; resource: string };
  }
  /** Calls a Core API path with an agent access token. */
  const withToken = (token: string, path: string) =>
    fetch(`${app.core}/instances/${INSTANCE}${path}`, { headers: { 'x-agent-access-token': token } });

  beforeAll(async () => {
    app = await startTestApp();
    for (const name of ['alpha', 'beta'])
      expect((await app.call('POST', agentUrl(name), { body: { name } })).status).toBe(200);
  });
  afterAll(() => app.close());

  it('issues a token once, in the create result, and stores only a hash', async () => {
    const created = await issue('alpha', { description: 'CI bot', expiration_date: '2099-01-01T00:00:00Z' });
    expect(created).toMatchObject({ resource_object_id: null, is_success: true });
    const parts = parseToken(created.resource)!;
    expect(parts).toMatchObject({
      instanceId: INSTANCE,
      contextId: `${INSTANCE}~Svc.Agent~Agents~alpha`,
      agentName: 'alpha',
    });
    expect(created.object_id).toBe(
      `/instances/${INSTANCE}/providers/Svc.Agent/agents/alpha/agentAccessTokens/${parts.tokenId}`,
    );

    const stored = await tokens().read('alpha', parts.tokenId);
    expect(stored).toMatchObject({
      name: expect.any(String) as string,
      active: true,
      description: 'CI bot',
      expiration_date: '2099-01-01T00:00:00.000Z',
    });
    expect(JSON.stringify(stored)).not.toContain(parts.secret);

    const listed = await app.call('GET', tokensUrl('alpha'));
    expect(listed.status).toBe(200);
    const item = (listed.body as { resource: Record<string, unknown> }[]).find((t) => t.resource.id === parts.tokenId);
    expect(item?.resource).toEqual({
      type: 'agent-access-token',
      name: stored?.name,
      object_id: created.object_id,
      id: parts.tokenId,
      active: true,
      description: 'CI bot',
      expiration_date: '2099-01-01T00:00:00.000Z',
      last_used_on: null,
    });
    expect(JSON.stringify(listed.body)).not.toContain(parts.secret);
    expect(JSON.stringify(listed.body)).not.toContain('sha256');
  });

  it('rejects bad create bodies and unknown agents', async () => {
    expect((await app.call('POST', tokensUrl('alpha'), { body: { name: 'x' } })).status).toBe(400);
    expect((await app.call('POST', tokensUrl('alpha'), { body: { type: 'agent', name: 'x' } })).status).toBe(400);
    expect((await app.call('POST', tokensUrl('alpha'), { body: { type: 'agent-access-token' } })).status).toBe(400);
    expect(
      (
        await app.call('POST', tokensUrl('alpha'), {
          body: { type: 'agent-access-token', name: 'x', expiration_date: '2001-01-01T00:00:00Z' },
        })
      ).status,
    ).toBe(400);
    expect(
      (
        await app.call('POST', tokensUrl('alpha'), {
          body: { type: 'agent-access-token', name: 'x', expiration_date: 'tomorrow' },
        })
      ).status,
    ).toBe(400);
    expect(
      (await app.call('POST', tokensUrl('ghost'), { body: { type: 'agent-access-token', name: 'x' } })).status,
    ).toBe(404);
  });

  it('authenticates the Core API with the virtual identity of the token', async () => {
    const { resource: token } = await issue('alpha');
    const r = await withToken(token, '/completions/agents');
    expect(r.status).toBe(200);
    const list = (await r.json()) as { resource: { name: string }; roles: string[] }[];
    expect(list.map((a) => a.resource.name)).toEqual(['alpha']);
    expect(list[0]?.roles).toEqual(['Reader']);
    expect((await withToken(token, '/branding')).status).toBe(200);
  });

  it('validates: valid with the virtual identity, otherwise only valid: false', async () => {
    const { resource: token } = await issue('alpha');
    const { tokenId } = parseToken(token)!;
    const group = (
      (await app.call('GET', agentUrl('alpha'))).body as { resource: { virtual_security_group_id: string } }
    ).resource.virtual_security_group_id;
    const ok = await app.call('POST', `${tokensUrl('alpha')}/validate`, { body: { access_token: token } });
    expect(ok.body).toEqual({
      valid: true,
      virtual_identity: {
        user_id: tokenId,
        name: tokenId,
        upn: `aat_alpha_${tokenId}@agent-platform.internal`,
        group_ids: [group, allAgentsGroupId(INSTANCE)],
      },
    });
    expect(
      (await app.call('POST', `${tokensUrl('alpha')}/validate`, { body: { access_token: `${token}x` } })).body,
    ).toEqual({ valid: false });
    expect((await app.call('POST', `${tokensUrl('beta')}/validate`, { body: { access_token: token } })).body).toEqual({
      valid: false,
    });
    expect((await app.call('POST', `${tokensUrl('alpha')}/validate`, { body: {} })).status).toBe(400);
  });

  describe('each validation step rejects its own bad token with 401', () => {
    const expect401 = async (token: string, reason: string) => {
      const r = await withToken(token, '/branding');
      expect(r.status).toBe(401);
      expect(await r.json()).toEqual({ error: { code: 'Unauthorized', message: reason } });
    };

    it('1. bad format', async () => {
      await expect401('keya.not.a.token', 'Agent access token is malformed');
      await expect401('Bearer abc', 'Agent access token is malformed');
      const other = formatToken({
        instanceId: randomUUID(),
        agentName: 'alpha',
        tokenId: randomUUID(),
        secret: newSecret(),
      });
      await expect401(other, 'Agent access token is malformed');
    });

    it('2. unknown token id', async () => {
      await expect401(
        formatToken({ instanceId: INSTANCE, agentName: 'alpha', tokenId: randomUUID(), secret: newSecret() }),
        'Agent access token not found',
      );
    });

    it('3. expired', async () => {
      const { resource: token } = await issue('alpha', { expiration_date: new Date(Date.now() + 1500).toISOString() });
      expect((await withToken(token, '/branding')).status).toBe(200);
      await new Promise((r) => setTimeout(r, 1600));
      await expect401(token, 'Agent access token expired');
    });

    it('4. inactive', async () => {
      const { resource: token } = await issue('alpha');
      const { tokenId } = parseToken(token)!;
      const doc = (await tokens().read('alpha', tokenId))!;
      await tokens().replace({ ...doc, active: false });
      await expect401(token, 'Agent access token is inactive');
    });

    it('5. agent name mismatch', async () => {
      const { resource: token } = await issue('alpha');
      const parts = parseToken(token)!;
      // A record of alpha's token filed under beta: found by id, but for another agent.
      const doc = (await tokens().read('alpha', parts.tokenId))!;
      await tokens().create({ ...doc, pk: 'beta' });
      await expect401(
        formatToken({ instanceId: INSTANCE, agentName: 'beta', tokenId: parts.tokenId, secret: parts.secret }),
        'Agent access token belongs to another agent',
      );
      // Claiming another agent without such a record fails at the lookup.
      const { resource: other } = await issue('alpha');
      const o = parseToken(other)!;
      await expect401(
        formatToken({ instanceId: INSTANCE, agentName: 'beta', tokenId: o.tokenId, secret: o.secret }),
        'Agent access token not found',
      );
    });

    it('6. wrong secret, of the same and of a different length', async () => {
      const { resource: token } = await issue('alpha');
      const parts = parseToken(token)!;
      const sameLength = parts.secret.slice(0, -1) + (parts.secret.endsWith('A') ? 'B' : 'A');
      await expect401(
        formatToken({ instanceId: INSTANCE, agentName: 'alpha', tokenId: parts.tokenId, secret: sameLength }),
        'Agent access token secret is invalid',
      );
      await expect401(
        formatToken({ instanceId: INSTANCE, agentName: 'alpha', tokenId: parts.tokenId, secret: `${parts.secret}zz` }),
        'Agent access token secret is invalid',
      );
      // And after a good call has warmed the cache, a wrong secret still fails.
      expect((await withToken(token, '/branding')).status).toBe(200);
      await expect401(
        formatToken({ instanceId: INSTANCE, agentName: 'alpha', tokenId: parts.tokenId, secret: sameLength }),
        'Agent access token secret is invalid',
      );
    });
  });

  it('rejects a deleted token at once, even right after it was used', async () => {
    const { resource: token } = await issue('alpha');
    const { tokenId } = parseToken(token)!;
    expect((await withToken(token, '/branding')).status).toBe(200);
    const del = await app.call('DELETE', `${tokensUrl('alpha')}/${tokenId}`);
    expect(del.status).toBe(204);
    expect((await withToken(token, '/branding')).status).toBe(401);
    expect((await app.call('DELETE', `${tokensUrl('alpha')}/${tokenId}`)).status).toBe(404);
    const listed = (await app.call('GET', tokensUrl('alpha'))).body as { resource: { id: string } }[];
    expect(listed.map((t) => t.resource.id)).not.toContain(tokenId);
  });

  it(
    'is switched off and on: refused on the next request here, within 30 s on another instance; its last use is ' +
      'listed',
    async () => {
      const { resource: token } = await issue('alpha');
      const { tokenId } = parseToken(token)!;
      const other = await startTestApp(
        {},
        { store: openSqliteStore(path.join(app.dataDir, 'store.db')), consumers: false },
      );
      try {
        const onOther = () =>
          fetch(`${other.core}/instances/${INSTANCE}/branding`, { headers: { 'x-agent-access-token': token } });
        expect((await withToken(token, '/branding')).status).toBe(200);
        expect((await onOther()).status).toBe(200);
        const listed = (await app.call('GET', tokensUrl('alpha'))).body as {
          resource: { id: string; last_used_on: string | null };
        }[];
        const used = listed.find((t) => t.resource.id === tokenId)?.resource.last_used_on;
        expect(Date.now() - Date.parse(used ?? '')).toBeLessThan(60_000);

        const off = await app.call('POST', `${tokensUrl('alpha')}/${tokenId}/deactivate`);
        expect(off.status).toBe(200);
        expect((off.body as { resource: { active: boolean } }).resource.active).toBe(false);
        const switched = Date.now();
        expect((await withToken(token, '/branding')).status).toBe(401);
        await expect.poll(async () => (await onOther()).status, { timeout: 32_000, interval: 500 }).toBe(401);
        const seconds = (Date.now() - switched) / 1000;
        process.stdout.write(`deactivated token refused on the other instance after ${seconds.toFixed(1)} s\n`);
        expect(seconds).toBeLessThanOrEqual(31);

        const on = await app.call('POST', `${tokensUrl('alpha')}/${tokenId}/activate`);
        expect((on.body as { resource: { active: boolean } }).resource.active).toBe(true);
        expect((await withToken(token, '/branding')).status).toBe(200);
        expect((await app.call('POST', `${tokensUrl('alpha')}/${randomUUID()}/deactivate`)).status).toBe(404);
        expect((await app.call('POST', `${tokensUrl('beta')}/${tokenId}/deactivate`)).status).toBe(404);
      } finally {
        await other.close();
      }
    },
    45_000,
  );

  it('reaches only its own agent, and never the Management API', async () => {
    const { resource: token } = await issue('beta');
    const r = await withToken(token, '/completions/agents');
    expect(((await r.json()) as { resource: { name: string } }[]).map((a) => a.resource.name)).toEqual(['beta']);
    const management = await fetch(agentUrl('beta'), { headers: { 'x-agent-access-token': token } });
    expect(management.status).toBe(401);
    const tokenList = await fetch(tokensUrl('beta'), { headers: { 'x-agent-access-token': token } });
    expect(tokenList.status).toBe(401);
  });

  it('costs one store read when cold (and the last-used time, once a minute) and none when warm', async () => {
    const { resource: token } = await issue('alpha');
    app.store.reset();
    await withToken(token, '/branding');
    await expect.poll(() => app.store.counts.get('tokens')).toEqual({ reads: 1, queries: 0, writes: 1 });
    app.store.reset();
    await withToken(token, '/branding');
    expect(app.store.counts.get('tokens')).toBeUndefined();
  });

  it('needs Agent Access Tokens Contributor (or Owner) on the agent to manage tokens', async () => {
    const assign = async (upn: string, role: string) => {
      const name = randomUUID();
      await app.call(
        'POST',
        `${app.management}/instances/${INSTANCE}/providers/Svc.Authorization/roleAssignments/${name}`,
        {
          body: {
            name,
            principal_id: oidForUpn(upn),
            principal_type: 'User',
            role_definition_id: roleDefinitionPath(role),
            scope: `/instances/${INSTANCE}/providers/Svc.Agent/agents/alpha`,
          },
        },
      );
    };
    const contributor = 'aat-contrib@example.com';
    const reader = 'aat-reader@example.com';
    await assign(contributor, ROLE_IDS.agentAccessTokensContributor);
    await assign(reader, ROLE_IDS.reader);
    const body = { type: 'agent-access-token', name: 'by-contributor' };
    const created = await app.call('POST', tokensUrl('alpha'), { as: contributor, body });
    expect(created.status).toBe(200);
    expect((await app.call('GET', tokensUrl('alpha'), { as: contributor })).status).toBe(200);
    const { tokenId } = parseToken((created.body as { resource: string }).resource)!;
    expect((await app.call('POST', tokensUrl('alpha'), { as: reader, body })).status).toBe(403);
    expect((await app.call('DELETE', `${tokensUrl('alpha')}/${tokenId}`, { as: reader })).status).toBe(403);
    expect((await app.call('DELETE', `${tokensUrl('alpha')}/${tokenId}`, { as: contributor })).status).toBe(204);
    // Only on that agent.
    expect((await app.call('POST', tokensUrl('beta'), { as: contributor, body })).status).toBe(403);
  });
});
