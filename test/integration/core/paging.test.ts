// Paged lists over HTTP: `top` and `continuationToken` on every list that can grow without
// bound, the body still the plain array, `x-continuation-token` while more follow; tokens are opaque,
// tamper-evident, and bound to the caller and the list.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockLlm, type MockLlm } from '../../../scripts/mock-llm.js';
import { grantReader, seedAgent } from '../../support/agents.js';
import { providers, startTestApp, type TestApp } from '../../support/app.js';
import { INSTANCE } from '../../support/services.js';

describe('paged lists', () => {
  let app: TestApp;
  let llm: MockLlm;
  const core = (path: string) => `${app.core}/instances/${INSTANCE}${path}`;

  /** Every item of a list, following continuation tokens; the size of each page. */
  async function walk(
    url: string,
    top: number,
    as?: string,
  ): Promise<{ items: Record<string, unknown>[]; pages: number[] }> {
    const items: Record<string, unknown>[] = [];
    const pages: number[] = [];
    let token: string | null = null;
    do {
      const query = new URLSearchParams({ top: String(top), ...(token ? { continuationToken: token } : {}) });
      const r = await app.call('GET', `${url}?${query}`, as ? { as } : {});
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(Array.isArray(r.body)).toBe(true);
      items.push(...(r.body as Record<string, unknown>[]));
      pages.push((r.body as unknown[]).length);
      token = r.headers.get('x-continuation-token');
    } while (token);
    return { items, pages };
  }
  /** Lets the clock move on, so that items created one after the other have distinct timestamps. */
  const tick = () => new Promise((resolve) => setTimeout(resolve, 3));
  const firstToken = async (url: string, as?: string) =>
    (await app.call('GET', `${url}?top=1`, as ? { as } : {})).headers.get('x-continuation-token')!;

  beforeAll(async () => {
    llm = await startMockLlm();
    app = await startTestApp();
    await seedAgent(app, 'pager', { llmUrl: llm.url });
  });
  afterAll(async () => {
    await app.close();
    await llm.close();
  });

  it('pages sessions: every session once, most recent first, the header only while more follow', async () => {
    const as = 'sessions@example.com';
    const created: string[] = [];
    for (let i = 0; i < 5; i++) {
      created.push(
        ((await app.call('POST', core('/sessions'), { as, body: { name: `s${i}` } })).body as { id: string }).id,
      );
      await tick();
    }
    const { items, pages } = await walk(core('/sessions'), 2, as);
    expect(pages).toEqual([2, 2, 1]);
    expect(items.map((s) => s.id)).toEqual([...created].reverse());
    const all = await app.call('GET', core('/sessions'), { as });
    expect(all.headers.get('x-continuation-token')).toBeNull();
    expect((all.body as unknown[]).length).toBe(5);
  });

  it("renames a session of the caller's (the portal's rename), and 404s anyone else's", async () => {
    const created = await app.call('POST', core('/sessions'), { body: { name: 'Before' }, as: 'renamer@example.com' });
    const id = (created.body as { id: string }).id;
    const renamed = await app.call('POST', core(`/sessions/${id}/rename`), {
      body: { name: '  After  ' },
      as: 'renamer@example.com',
    });
    expect(renamed).toMatchObject({ status: 200, body: { id, name: 'After' } });
    const listed = await app.call('GET', core('/sessions'), { as: 'renamer@example.com' });
    expect((listed.body as { id: string; name: string }[]).find((s) => s.id === id)?.name).toBe('After');
    expect(
      (await app.call('POST', core(`/sessions/${id}/rename`), { body: { name: 'Mine now' }, as: 'other@example.com' }))
        .status,
    ).toBe(404);
    expect(
      (await app.call('POST', core(`/sessions/${id}/rename`), { body: { name: ' ' }, as: 'renamer@example.com' }))
        .status,
    ).toBe(400);
  });

  it('pages messages oldest first, and files newest first', async () => {
    const session = ((await app.call('POST', core('/sessions'), { body: { name: 'long' } })).body as { id: string }).id;
    for (const prompt of ['one', 'two', 'three']) {
      expect(
        (
          await app.call('POST', core('/completions'), {
            body: { user_prompt: prompt, agent_name: 'pager', session_id: session },
          })
        ).status,
      ).toBe(200);
    }
    const messages = await walk(core(`/sessions/${session}/messages`), 4);
    expect(messages.pages).toEqual([4, 2]);
    expect(messages.items.map((m) => m.text)).toEqual(['one', 'Echo: one', 'two', 'Echo: two', 'three', 'Echo: three']);

    const as = 'files@example.com';
    await grantReader(app, as, 'pager');
    for (const name of ['a.txt', 'b.txt', 'c.txt']) {
      const form = new FormData();
      form.append('file', new Blob([name]), name);
      form.append('agent_name', 'pager');
      expect(
        (
          await fetch(core('/files/upload'), {
            method: 'POST',
            body: form,
            headers: { authorization: `Bearer ${await app.token(as)}` },
          })
        ).status,
      ).toBe(200);
      await tick();
    }
    const files = await walk(core('/files'), 2, as);
    expect(files.pages).toEqual([2, 1]);
    expect(files.items.map((f) => f.display_name)).toEqual(['c.txt', 'b.txt', 'a.txt']);
  });

  it('pages Management lists: resources (those the caller may read), role assignments, access tokens', async () => {
    for (const name of ['page-a', 'page-b', 'page-c']) await seedAgent(app, name, { llmUrl: llm.url });
    const everything = await walk(providers(app, 'Svc.Agent/agents'), 1000);
    const agents = await walk(providers(app, 'Svc.Agent/agents'), 2);
    expect(agents.items.map((a) => (a.resource as { name: string }).name)).toEqual(
      everything.items.map((a) => (a.resource as { name: string }).name),
    );
    expect(agents.items.length).toBeGreaterThanOrEqual(4);
    expect(agents.pages.every((n) => n === 2 || n === agents.items.length % 2)).toBe(true);

    // A reader of two agents pages through exactly those two.
    const reader = 'two-agents@example.com';
    await grantReader(app, reader, 'page-a');
    await grantReader(app, reader, 'page-c');
    const readable = await walk(providers(app, 'Svc.Agent/agents'), 1, reader);
    expect(readable.items.map((a) => (a.resource as { name: string }).name)).toEqual(['page-a', 'page-c']);

    const assignments = await walk(providers(app, 'Svc.Authorization/roleAssignments'), 3);
    expect(new Set(assignments.items.map((a) => (a.resource as { name: string }).name)).size).toBe(
      assignments.items.length,
    );
    expect(assignments.items.length).toBeGreaterThanOrEqual(5);

    const tokens = `${providers(app, 'Svc.Agent/agents')}/page-a/agent-access-tokens`;
    for (let i = 0; i < 3; i++) {
      const r = await app.call('POST', tokens, {
        body: { type: 'agent-access-token', name: `t${i}`, description: `t${i}` },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      await tick();
    }
    const listed = await walk(tokens, 2);
    expect(listed.pages).toEqual([2, 1]);
    expect(listed.items.map((t) => (t.resource as { description: string }).description)).toEqual(['t0', 't1', 't2']);
  });

  it("refuses a bad top, and a token that was altered, is someone else's, or belongs to another list", async () => {
    for (const top of ['0', '1001', 'ten', '1.5']) {
      const r = await app.call('GET', core(`/sessions?top=${top}`));
      expect(r.status, top).toBe(400);
      expect(r.body).toMatchObject({ error: { code: 'ValidationError', details: [{ field: 'top' }] } });
    }
    expect((await app.call('GET', `${providers(app, 'Svc.Agent/agents')}?top=0`)).body).toMatchObject({
      error: { code: 'BadRequest' },
    });

    const as = 'tokens@example.com';
    for (let i = 0; i < 2; i++) await app.call('POST', core('/sessions'), { as, body: { name: `t${i}` } });
    const token = await firstToken(core('/sessions'), as);
    expect(token).toBeTruthy();
    const use = (url: string, t: string, who?: string) =>
      app.call('GET', `${url}?continuationToken=${encodeURIComponent(t)}`, who ? { as: who } : {});
    expect((await use(core('/sessions'), token, as)).status).toBe(200);

    const [payload, mac] = token.split('.') as [string, string];
    const forged = Buffer.from(
      JSON.stringify({ s: 0, n: 1000, c: Buffer.from(JSON.stringify({ o: 0 })).toString('base64url') }),
    ).toString('base64url');
    // One character of the MAC changed (always to a different one).
    const altered = `${mac.startsWith('A') ? 'B' : 'A'}${mac.slice(1)}`;
    for (const bad of [`${forged}.${mac}`, `${payload}.${altered}`, payload, 'garbage', `${payload}.${mac}.x`]) {
      const r = await use(core('/sessions'), bad, as);
      expect(r.status, bad).toBe(400);
      expect(r.body).toMatchObject({ error: { code: 'ValidationError', details: [{ field: 'continuationToken' }] } });
    }
    // Someone else's token, or this caller's token on another list.
    expect((await use(core('/sessions'), token)).status).toBe(400);
    expect((await use(core('/files'), token, as)).status).toBe(400);
  });
});
