// Who may do what to whom: names that differ only by case, role assignments outside the caller's scope,
// access tokens outliving their agent, one person under two spellings, operation ids shared by two users.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oidForUpn } from '../../../shared/auth/local-idp.js';
import { ROLE_IDS, roleDefinitionPath } from '../../../shared/providers/types/roles.js';
import { operationKey } from '../../../shared/completions/operations.js';
import { processOperation } from '../../../shared/completions/worker.js';
import { startMockLlm, type MockLlm } from '../../../scripts/mock-llm.js';
import { seedAgent } from '../../support/agents.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { INSTANCE } from '../../support/services.js';

describe('access', () => {
  let app: TestApp;
  let llm: MockLlm;
  const providers = (path: string) => `${app.management}/instances/${INSTANCE}/providers/${path}`;
  const core = (path: string) => `${app.core}/instances/${INSTANCE}${path}`;
  const assign = (upn: string, role: string, scope: string, name: string = randomUUID(), as?: string) =>
    app.call('POST', providers(`Svc.Authorization/roleAssignments/${name}`), {
      body: {
        name,
        principal_id: oidForUpn(upn),
        principal_type: 'User',
        role_definition_id: roleDefinitionPath(role),
        scope,
      },
      ...(as ? { as } : {}),
    });

  beforeAll(async () => {
    llm = await startMockLlm();
    app = await startTestApp();
    await seedAgent(app, 'victim', { llmUrl: llm.url });
  });
  afterAll(async () => {
    await app.close();
    await llm.close();
  });

  it('refuses a name differing from an existing one only by case: nobody becomes Owner of another agent', async () => {
    expect((await assign('mallory@example.com', ROLE_IDS.contributor, `/instances/${INSTANCE}`)).status).toBe(200);
    const r = await app.call('POST', providers('Svc.Agent/agents/VICTIM'), {
      body: {
        name: 'VICTIM',
        workflow_object_id: `/instances/${INSTANCE}/providers/Svc.Agent/workflows/victim-workflow`,
      },
      as: 'mallory@example.com',
    });
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({
      error: { code: 'Conflict', message: expect.stringContaining('differ only by case') as string },
    });
    // Mallory holds no Owner role on victim, so cannot grant herself anything there.
    expect(
      (
        await assign(
          'mallory@example.com',
          ROLE_IDS.owner,
          `/instances/${INSTANCE}/providers/Svc.Agent/agents/victim`,
          undefined,
          'mallory@example.com',
        )
      ).status,
    ).toBe(403);
    const identity = (
      await app.call('GET', `${app.management}/instances/${INSTANCE}/identity`, { as: 'mallory@example.com' })
    ).body as { role_assignments: { role_name: string }[] };
    expect(identity.role_assignments.map((a) => a.role_name)).toEqual(['Contributor']);
    // A lookup in another case finds the one agent.
    expect((await app.call('GET', providers('Svc.Agent/agents/VICTIM'))).body).toMatchObject({
      resource: { name: 'victim' },
    });
  });

  it(
    'lets a narrowly scoped User Access Administrator neither delete nor rewrite assignments whose scope it ' +
      'does not hold',
    async () => {
      const narrow = `/instances/${INSTANCE}/providers/Svc.Authorization`;
      expect((await assign('uaa@example.com', ROLE_IDS.userAccessAdministrator, narrow)).status).toBe(200);
      const bobName = randomUUID();
      expect((await assign('bob@example.com', ROLE_IDS.reader, `/instances/${INSTANCE}`, bobName)).status).toBe(200);
      const owner = `bootstrap-owner-5e2b6f0a-7c1d-4e8f-9a3b-1c2d3e4f5a6b`;
      expect(
        (await app.call('DELETE', providers(`Svc.Authorization/roleAssignments/${owner}`), { as: 'uaa@example.com' }))
          .status,
      ).toBe(403);
      // Moving bob's instance-wide grant into its own scope would take away a grant it could not have made.
      expect(
        (await assign('bob@example.com', ROLE_IDS.reader, `${narrow}/roleAssignments/x`, bobName, 'uaa@example.com'))
          .status,
      ).toBe(403);
      expect(
        (await app.call('DELETE', providers(`Svc.Authorization/roleAssignments/${bobName}`), { as: 'uaa@example.com' }))
          .status,
      ).toBe(403);
      // The owner still can.
      expect((await app.call('DELETE', providers(`Svc.Authorization/roleAssignments/${bobName}`))).status).toBe(200);
    },
  );

  it("removes an agent's access tokens with it, and a token never works for a new agent of the same name", async () => {
    await seedAgent(app, 'fleeting', { llmUrl: llm.url });
    const tokens = providers('Svc.Agent/agents/fleeting/agent-access-tokens');
    const created = await app.call('POST', tokens, { body: { type: 'agent-access-token', name: 't' } });
    const token = (created.body as { resource: string }).resource;
    const use = () =>
      fetch(core('/completions'), {
        method: 'POST',
        headers: { 'x-agent-access-token': token, 'content-type': 'application/json' },
        body: JSON.stringify({ user_prompt: 'hi' }),
      });
    expect((await use()).status).toBe(200);
    expect((await app.call('DELETE', providers('Svc.Agent/agents/fleeting'))).status).toBe(200);
    expect((await app.call('POST', providers('Svc.Agent/agents/fleeting/purge'))).status).toBe(200);
    expect((await app.services.store.container('tokens').query({ partition: 'fleeting' })).items).toEqual([]);
    await seedAgent(app, 'fleeting', { llmUrl: llm.url });
    expect((await use()).status).toBe(401);
    expect((await app.call('POST', `${tokens}/validate`, { body: { access_token: token } })).body).toEqual({
      valid: false,
    });
  });

  it('treats one person signing in as ALICE@Example.com and alice@example.com as one owner', async () => {
    const session = await app.call('POST', core('/sessions'), { body: { name: 'Shouting' }, as: 'ALICE@Example.com' });
    expect(session.status).toBe(200);
    expect(
      (
        await app.call('POST', core('/memory/append'), {
          body: { scope: 'user', content_markdown: 'Likes tea' },
          as: 'ALICE@Example.com',
        })
      ).status,
    ).toBe(200);
    const sessions = (await app.call('GET', core('/sessions'), { as: 'alice@example.com' })).body as { id: string }[];
    expect(sessions.map((s) => s.id)).toContain((session.body as { id: string }).id);
    expect((await app.call('GET', core('/memory?scope=user'), { as: 'alice@example.com' })).body).toMatchObject({
      content_markdown: expect.stringContaining('Likes tea') as string,
    });
    expect(((await app.call('GET', core('/sessions'), { as: 'bob@example.com' })).body as unknown[]).length).toBe(0);
  });

  it("scopes operation ids by caller: another user's id is neither refused nor revealed", async () => {
    expect(
      (await assign('carol@example.com', ROLE_IDS.reader, `/instances/${INSTANCE}/providers/Svc.Agent/agents/victim`))
        .status,
    ).toBe(200);
    const start = (prompt: string, as?: string) =>
      app.call('POST', core('/async-completions'), {
        body: { user_prompt: prompt, agent_name: 'victim', operation_id: 'op-shared' },
        ...(as ? { as } : {}),
      });
    expect((await start('owner asks')).status).toBe(202);
    expect((await start('carol asks', 'carol@example.com')).status).toBe(202);
    const read = async (as?: string) => {
      for (;;) {
        const body = (await app.call('GET', core('/async-completions/op-shared/status'), as ? { as } : {})).body as {
          status: string;
          result: { user_prompt: string } | null;
        };
        if (body.status !== 'InProgress') return body;
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    expect((await read()).result?.user_prompt).toBe('owner asks');
    expect((await read('carol@example.com')).result?.user_prompt).toBe('carol asks');
    expect((await start('again')).status).toBe(409);
  });

  it('tells the starter of a failed operation why in plain words, never internal exception text', async () => {
    const noWorker = await startTestApp({}, { consumers: false });
    try {
      await seedAgent(noWorker, 'victim', { llmUrl: llm.url });
      expect(
        (
          await noWorker.call('POST', `${noWorker.core}/instances/${INSTANCE}/async-completions`, {
            body: { user_prompt: 'x', agent_name: 'victim', operation_id: 'op-odd' },
          })
        ).status,
      ).toBe(202);
      const ops = noWorker.services.store.container('operations');
      const key = operationKey('owner@local.test', 'op-odd');
      const op = (await ops.read(key, key))!;
      // Something the code does not expect: a session id that is not a string.
      await ops.replace({ ...op, request: { ...op.request, session_id: 5 as unknown as string } });
      await processOperation({ key }, { id: 'm', dequeueCount: 5 }, noWorker.services);
      const failed = (
        await noWorker.call('GET', `${noWorker.core}/instances/${INSTANCE}/async-completions/op-odd/status`)
      ).body as { status: string; status_message: string };
      expect(failed.status).toBe('Failed');
      expect(failed.status_message).toBe('Failed after 5 attempts: an internal error stopped the completion');
      expect(
        noWorker.services.log.records.some(
          (r) => r.level === 'error' && JSON.stringify(r.fields).includes('toLowerCase'),
        ),
      ).toBe(true);
    } finally {
      await noWorker.close();
    }
  });
});
