// Personalized memory over HTTP: every rule of memory and every memory error.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACT_ON_BEHALF_ROLE } from '../../../shared/memory/on-behalf.js';
import { MemoryTools } from '../../../shared/memory/tools.js';
import { startMockLlm, type MockLlm } from '../../../scripts/mock-llm.js';
import { seedAgent } from '../../support/agents.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { INSTANCE } from '../../support/services.js';

const AGENT = `/instances/${INSTANCE}/providers/Svc.Agent/agents/mem`;

describe('personalized memory', () => {
  let app: TestApp;
  let llm: MockLlm;
  const url = (path: string) => `${app.core}/instances/${INSTANCE}/memory${path}`;
  const read = (query: string, as?: string) => app.call('GET', url(`?${query}`), as ? { as } : {});
  const post = (path: string, body: unknown, as?: string, headers?: Record<string, string>) =>
    app.call('POST', url(path), { body, ...(as ? { as } : {}), ...(headers ? { headers } : {}) });

  beforeAll(async () => {
    llm = await startMockLlm();
    app = await startTestApp({ MEMORY_MAX_BYTES: '20000' });
    await seedAgent(app, 'mem', { llmUrl: llm.url });
  });
  afterAll(async () => {
    await app.close();
    await llm.close();
  });

  it('reads missing memory as 200 with empty content (combined by default)', async () => {
    const r = await read('', 'fresh@example.com');
    expect(r).toMatchObject({
      status: 200,
      body: {
        scope: 'combined',
        upn: 'fresh@example.com',
        content_markdown: '',
        created_on: null,
        updated_on: null,
        agent_object_id: null,
      },
    });
    expect((await read(`scope=agent&agentObjectId=${AGENT}`)).body).toMatchObject({
      scope: 'agent',
      content_markdown: '',
      agent_object_id: AGENT,
      agent_name: 'mem',
    });
  });

  it('appends under a heading with provenance, keeps the profile, and names the user', async () => {
    const as = 'writer@example.com';
    const first = await post(
      '/append',
      {
        scope: 'user',
        content_markdown: 'Prefers metric units.',
        reason: 'User said so',
        operation_id: 'op-1',
        session_id: 's-1',
      },
      as,
    );
    expect(first.status).toBe(200);
    const body = first.body as Record<string, string>;
    expect(body).toMatchObject({ scope: 'user', upn: as, user_name: as, name: 'writer', agent_object_id: null });
    expect(body.content_markdown).toMatch(
      new RegExp(
        /^## Memory: User said so\n_Recorded \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z · /.source +
          /reason: User said so · operation: op-1 · session: s-1_\n\nPrefers metric units\.\n$/.source,
      ),
    );
    await post('/append', { scope: 'user', content_markdown: 'Lives in Lyon.' }, as);
    const after = (await read('scope=user', as)).body as Record<string, string>;
    expect(after.content_markdown).toMatch(
      /Prefers metric units\.\n\n## Memory\n_Recorded [^_]+_\n\nLives in Lyon\.\n$/,
    );
    expect(after.created_on).toBe(body.created_on);
    expect(after.updated_on! >= body.updated_on!).toBe(true);
  });

  it('keeps agent memory per agent, resolves agent_name, and joins user and agent memory when combined', async () => {
    const as = 'combo@example.com';
    const assignment = '11111111-2222-4333-8444-555555555555';
    await app.call(
      'POST',
      `${app.management}/instances/${INSTANCE}/providers/Svc.Authorization/roleAssignments/${assignment}`,
      {
        body: {
          name: '11111111-2222-4333-8444-555555555555',
          principal_id: 'everyone-group',
          principal_type: 'Group',
          role_definition_id: '/providers/Svc.Authorization/roleDefinitions/00a53e72-f66e-4c03-8f81-7e885fd2eb35',
          scope: AGENT,
        },
      },
    );
    const token = await app.token(as, { groups: ['everyone-group'] });
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(url(path), {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
      return { status: res.status, body: (await res.json()) as Record<string, string> };
    };
    await call('POST', '/import', { scope: 'user', content_markdown: 'USER PART', mode: 'replace' });
    const agentPart = await call('POST', '/import', {
      scope: 'agent',
      agent_object_id: AGENT,
      content_markdown: 'AGENT PART',
      mode: 'replace',
    });
    expect(agentPart.body).toMatchObject({
      scope: 'agent',
      agent_object_id: AGENT,
      agent_name: 'mem',
      content_markdown: 'AGENT PART',
    });
    expect((await call('GET', `?agentObjectId=${encodeURIComponent(AGENT)}`)).body).toMatchObject({
      scope: 'combined',
      content_markdown: 'USER PART\n\nAGENT PART',
    });
    expect((await call('GET', '?scope=combined')).body.content_markdown).toBe('USER PART');
    expect((await call('GET', `?scope=user&agentObjectId=${encodeURIComponent(AGENT)}`)).body.content_markdown).toBe(
      'USER PART',
    );
  });

  it('clears only with confirm true, emptying the body and keeping the profile', async () => {
    const as = 'clearer@example.com';
    const appended = (await post('/append', { scope: 'user', content_markdown: 'temporary' }, as)).body as Record<
      string,
      string
    >;
    expect((await post('/clear', { scope: 'user' }, as)).status).toBe(400);
    expect((await post('/clear', { scope: 'user', confirm: false }, as)).body).toMatchObject({
      error: { code: 'ValidationError', details: [{ field: 'confirm', message: 'confirm must be true' }] },
    });
    const cleared = await post('/clear', { scope: 'user', confirm: true }, as);
    expect(cleared.body).toMatchObject({ scope: 'user', content_markdown: '', created_on: appended.created_on });
    expect((await read('scope=user', as)).body).toMatchObject({
      content_markdown: '',
      created_on: appended.created_on,
    });
  });

  it('round-trips export and import: export, clear, import replace, export again gives the same bytes', async () => {
    const as = 'roundtrip@example.com';
    await post(
      '/append',
      { scope: 'user', content_markdown: 'Café ☕ and naïve résumé\n- item', reason: 'unicode' },
      as,
    );
    await post('/append', { scope: 'user', content_markdown: 'second' }, as);
    const exported = await fetch(url('/export?scope=user'), {
      headers: { authorization: `Bearer ${await app.token(as)}` },
    });
    expect(exported.status).toBe(200);
    expect(exported.headers.get('content-type')).toBe('text/markdown; charset=utf-8');
    const bytes = Buffer.from(await exported.arrayBuffer());
    expect(bytes.toString()).toContain('Café ☕');
    await post('/clear', { scope: 'user', confirm: true }, as);
    expect(
      (await post('/import', { scope: 'user', content_markdown: bytes.toString('utf8'), mode: 'replace' }, as)).status,
    ).toBe(200);
    const again = Buffer.from(
      await (
        await fetch(url('/export?scope=user'), { headers: { authorization: `Bearer ${await app.token(as)}` } })
      ).arrayBuffer(),
    );
    expect(again.equals(bytes)).toBe(true);
    const appended = (await post('/import', { scope: 'user', content_markdown: 'imported notes' }, as)).body as Record<
      string,
      string
    >;
    expect(appended.content_markdown).toMatch(/second\n\n## Imported memory\n_Imported [^_]+_\n\nimported notes\n$/);
  });

  it('answers 400 for each invalid request', async () => {
    const bad = async (r: Promise<{ status: number; body: unknown }>, field: string) => {
      const res = await r;
      expect(res.status).toBe(400);
      expect(JSON.stringify(res.body)).toContain(field);
    };
    await bad(post('/append', { scope: 'agent', content_markdown: 'x' }), 'agent_object_id');
    await bad(post('/append', { scope: 'combined', content_markdown: 'x' }), 'scope');
    await bad(post('/append', { scope: 'user', content_markdown: '   \n ' }), 'content_markdown');
    await bad(post('/append', { scope: 'user' }), 'content_markdown');
    await bad(post('/import', { scope: 'user', content_markdown: '' }), 'content_markdown');
    await bad(post('/import', { scope: 'user', content_markdown: 'x', mode: 'merge' }), 'mode');
    await bad(read('scope=everything'), 'scope');
    await bad(read('scope=agent'), 'agent_object_id');
    await bad(read('scope=agent&agentObjectId=/instances/x/providers/Svc.Prompt/prompts/p'), 'agent_object_id');
    await bad(app.call('GET', url('/export')), 'scope');
  });

  it("answers the agent provider's 403 or 404 for agents the user may not use, 401 without credentials", async () => {
    expect((await read(`scope=agent&agentObjectId=${AGENT}`, 'no-access@example.com')).status).toBe(403);
    expect(
      (await read(`scope=agent&agentObjectId=/instances/${INSTANCE}/providers/Svc.Agent/agents/ghost`)).status,
    ).toBe(404);
    expect((await fetch(url(''))).status).toBe(401);
  });

  it("keeps users apart, and a token holder's memory apart from its creator's", async () => {
    await post(
      '/import',
      { scope: 'user', content_markdown: 'alice secret', mode: 'replace' },
      'alice.mem@example.com',
    );
    expect(
      ((await read('scope=user', 'bob.mem@example.com')).body as { content_markdown: string }).content_markdown,
    ).toBe('');
    const issued = await app.call(
      'POST',
      `${app.management}/instances/${INSTANCE}/providers/Svc.Agent/agents/mem/agent-access-tokens`,
      { body: { type: 'agent-access-token', name: 'mem-bot' } },
    );
    const token = (issued.body as { resource: string }).resource;
    await post('/import', { scope: 'user', content_markdown: 'owner notes', mode: 'replace' });
    const asToken = (path: string, body?: unknown) =>
      fetch(url(path), {
        method: body ? 'POST' : 'GET',
        headers: { 'x-agent-access-token': token, 'content-type': 'application/json' },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
    expect(((await (await asToken('?scope=user')).json()) as { content_markdown: string }).content_markdown).toBe('');
    const appended = (await (
      await asToken('/append', { scope: 'agent', agent_object_id: AGENT, content_markdown: 'bot memory' })
    ).json()) as { upn: string };
    expect(appended.upn).toMatch(/^aat_mem_/);
    expect(((await read('scope=user')).body as { content_markdown: string }).content_markdown).toBe('owner notes');
    expect(
      ((await read(`scope=agent&agentObjectId=${AGENT}`)).body as { content_markdown: string }).content_markdown,
    ).toBe('');
  });

  it('keeps all of 50 concurrent appends, in the order of their timestamps', async () => {
    const as = 'busy@example.com';
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => post('/append', { scope: 'user', content_markdown: `entry ${i}` }, as)),
    );
    expect(results.every((r) => r.status === 200)).toBe(true);
    const content = ((await read('scope=user', as)).body as { content_markdown: string }).content_markdown;
    const entries = [...content.matchAll(/_Recorded (\S+)_\n\nentry (\d+)/g)].map((m) => ({
      at: m[1]!,
      n: Number(m[2]),
    }));
    expect(entries).toHaveLength(50);
    expect(new Set(entries.map((e) => e.n)).size).toBe(50);
    expect(entries.map((e) => e.at)).toEqual([...entries.map((e) => e.at)].sort());
  });

  it('refuses a document over MEMORY_MAX_BYTES with 413 and writes nothing', async () => {
    const as = 'big@example.com';
    await post('/import', { scope: 'user', content_markdown: 'x'.repeat(15_000), mode: 'replace' }, as);
    const r = await post('/append', { scope: 'user', content_markdown: 'y'.repeat(6_000) }, as);
    expect(r).toMatchObject({ status: 413, body: { error: { code: 'MemoryTooLarge' } } });
    expect(((await read('scope=user', as)).body as { content_markdown: string }).content_markdown).toBe(
      'x'.repeat(15_000),
    );
  });

  it('lets a tool server act for a user only with the Memory.ActOnBehalf role, through the memory tools', async () => {
    const identity = { upn: 'dana@example.com', name: 'Dana' };
    const plain = await app.call('GET', url('?scope=user'), {
      headers: { 'x-user-identity': JSON.stringify(identity) },
    });
    expect(plain.status).toBe(403);

    const tools = new MemoryTools({
      coreUrl: app.core,
      instanceId: INSTANCE,
      agentObjectId: AGENT,
      serviceToken: () => app.token('tool-server@example.com', { roles: [ACT_ON_BEHALF_ROLE] }),
    });
    const appended = await tools.append_memory({ scope: 'user', memory: 'Dana likes tea.', reason: 'tool' }, identity);
    expect(appended).toMatchObject({ ok: true, memory: { upn: 'dana@example.com', name: 'Dana' } });
    expect(
      ((await read('scope=user', 'dana@example.com')).body as { content_markdown: string }).content_markdown,
    ).toContain('Dana likes tea.');
    expect(
      ((await read('scope=user', 'tool-server@example.com')).body as { content_markdown: string }).content_markdown,
    ).toBe('');
    expect(await tools.get_memory({ scope: 'user' }, identity)).toMatchObject({
      ok: true,
      memory: { content_markdown: expect.stringContaining('Dana likes tea.') as string },
    });
    const unconfirmed = await tools.clear_memory({ scope: 'user' }, identity);
    expect(unconfirmed).toMatchObject({ ok: false, status: 400 });
    expect(
      ((await read('scope=user', 'dana@example.com')).body as { content_markdown: string }).content_markdown,
    ).toContain('Dana likes tea.');
    expect(await tools.clear_memory({ scope: 'user', confirm: true }, identity)).toMatchObject({
      ok: true,
      memory: { content_markdown: '' },
    });
    // Agent scope needs Dana's own access to the agent.
    expect(await tools.get_memory({ scope: 'agent' }, identity)).toMatchObject({ ok: false, status: 403 });
  });
});
