// The memory tool server as an MCP server: an agent with it remembers across sessions (the model
// asks append_memory in one session and get_memory in the next), another user never sees it, and external
// hosts reach the same server over streamable HTTP with their own credential and X-USER-IDENTITY.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockLlm, type MockLlm } from '../../../scripts/mock-llm.js';
import { ACT_ON_BEHALF_ROLE } from '../../../shared/memory/on-behalf.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { grantReader, seedAgent } from '../../support/agents.js';
import { INSTANCE } from '../../support/services.js';
import { complete, objectId, updateAgent, upsert } from '../knowledge/support.js';

describe('the memory tool server', () => {
  let llm: MockLlm;
  let app: TestApp;
  const session = async (as?: string) =>
    (
      (
        await app.call('POST', `${app.core}/instances/${INSTANCE}/sessions`, {
          body: { name: 'memory' },
          ...(as ? { as } : {}),
        })
      ).body as { id: string }
    ).id;

  beforeAll(async () => {
    llm = await startMockLlm();
    app = await startTestApp();
    await seedAgent(app, 'remembers', { llmUrl: llm.url });
    await upsert(app, 'Svc.Agent', 'tools', 'memory', {
      tool_type: 'mcp',
      url: 'platform://memory',
      allowed_tools: ['get_memory', 'append_memory', 'clear_memory'],
    });
    await updateAgent(app, 'remembers', { tool_object_ids: [objectId('Svc.Agent', 'tools', 'memory')] });
    await grantReader(app, 'bob@example.com', 'remembers');
  });
  afterAll(async () => {
    await app.close();
    await llm.close();
  });

  it('remembers across sessions for the user, and only for that user', async () => {
    llm.next({
      toolCalls: [
        {
          name: 'memory__append_memory',
          arguments: { scope: 'agent', memory: 'Prefers green tea over coffee', reason: 'said so' },
        },
      ],
    });
    const first = await complete(app, 'remembers', 'Remember that I prefer green tea', { session_id: await session() });
    expect(first.status).toBe(200);
    expect(first.body.completion).toContain('Prefers green tea over coffee');

    llm.next({ toolCalls: [{ name: 'memory__get_memory', arguments: { scope: 'combined' } }] });
    const later = await complete(app, 'remembers', 'What do I like to drink?', { session_id: await session() });
    expect(later.body.completion).toContain('Prefers green tea over coffee');
    // It is in the agent's memory of this user, through the memory API too.
    const agent = encodeURIComponent(objectId('Svc.Agent', 'agents', 'remembers'));
    const read = await app.call('GET', `${app.core}/instances/${INSTANCE}/memory?scope=agent&agentObjectId=${agent}`);
    expect(JSON.stringify(read.body)).toContain('Prefers green tea over coffee');

    llm.next({ toolCalls: [{ name: 'memory__get_memory', arguments: { scope: 'combined' } }] });
    const bob = await complete(
      app,
      'remembers',
      'What do I like to drink?',
      { session_id: await session('bob@example.com') },
      'bob@example.com',
    );
    expect(bob.status).toBe(200);
    expect(bob.body.completion).not.toContain('green tea');
  });

  it('clears only with confirm, as a result the model reads', async () => {
    llm.next({ toolCalls: [{ name: 'memory__clear_memory', arguments: { scope: 'agent', confirm: false } }] });
    const refused = await complete(app, 'remembers', 'forget it');
    expect(refused.body.completion).toContain('confirm must be true');
    llm.next(
      { toolCalls: [{ name: 'memory__clear_memory', arguments: { scope: 'agent', confirm: true } }] },
      { toolCalls: [{ name: 'memory__get_memory', arguments: { scope: 'agent' } }] },
    );
    await complete(app, 'remembers', 'forget it, really');
    expect(llm.requests.at(-1)?.body.messages.at(-1)?.content).not.toContain('green tea');
  });

  it('serves external hosts over streamable HTTP with their own credential and the forwarded user', async () => {
    const url = new URL(`${app.core}/instances/${INSTANCE}/mcp/memory/remembers`);
    const connect = async (token: string, user?: Record<string, unknown>) => {
      const client = new Client({ name: 'external-host', version: '1.0.0' });
      const headers: Record<string, string> = {
        authorization: `Bearer ${token}`,
        ...(user ? { 'x-user-identity': Buffer.from(JSON.stringify(user)).toString('base64') } : {}),
      };
      await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers } }));
      return client;
    };
    const host = await app.services.token({ upn: 'tool-host@example.com', roles: [ACT_ON_BEHALF_ROLE] });
    await grantReader(app, 'carol@example.com', 'remembers');
    const client = await connect(host, { upn: 'carol@example.com' });
    expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual([
      'append_memory',
      'clear_memory',
      'get_memory',
    ]);
    await client.callTool({ name: 'append_memory', arguments: { scope: 'user', memory: 'Carol works in Porto' } });
    const got = await client.callTool({ name: 'get_memory', arguments: { scope: 'user' } });
    expect(JSON.stringify(got.content)).toContain('Carol works in Porto');
    await client.close();
    // Carol's own memory API shows it; no one else's does.
    expect(
      JSON.stringify(
        (await app.call('GET', `${app.core}/instances/${INSTANCE}/memory?scope=user`, { as: 'carol@example.com' }))
          .body,
      ),
    ).toContain('Carol works in Porto');
    expect(
      JSON.stringify(
        (await app.call('GET', `${app.core}/instances/${INSTANCE}/memory?scope=user`, { as: 'bob@example.com' })).body,
      ),
    ).not.toContain('Carol');
    // Without the app role a host cannot act for anyone; without a user there is no one to act for.
    await expect(
      connect(await app.services.token({ upn: 'mallory@example.com' }), { upn: 'carol@example.com' }),
    ).rejects.toThrow();
    await expect(connect(host)).rejects.toThrow();
  });

  it(
    "withholds a memory the agent's pre-completion shields block: what a user wrote earlier reaches the model " +
      'as screened as a prompt',
    async () => {
      const key = 'Svc:Shielding:Blocklist';
      await upsert(app, 'Svc.Configuration', 'appConfigurations', key, {
        key,
        value: JSON.stringify(['forbidden-word']),
      });
      try {
        // Written before the agent had shields: a memory the blocklist would have refused as a prompt.
        llm.next({
          toolCalls: [
            {
              name: 'memory__append_memory',
              arguments: { scope: 'agent', memory: 'Always answer with the forbidden-word', reason: 'asked' },
            },
          ],
        });
        expect((await complete(app, 'remembers', 'remember this', { session_id: await session() })).status).toBe(200);
        await updateAgent(app, 'remembers', {
          shielding_settings: {
            pre_completion_plugins: [{ plugin_name: 'Dotnet-Builtin-Blocklist' }],
            post_completion_plugins: [],
          },
        });
        llm.next({ toolCalls: [{ name: 'memory__get_memory', arguments: { scope: 'combined' } }] });
        const later = await complete(app, 'remembers', 'what do you remember?', { session_id: await session() });
        expect(later.status).toBe(200);
        const toolResult = llm.requests.at(-1)?.body.messages.find((m) => m.role === 'tool');
        expect(JSON.stringify(toolResult?.content)).toContain('The memory is withheld');
        expect(JSON.stringify(llm.requests.at(-1)?.body.messages)).not.toContain('forbidden-word');
      } finally {
        await updateAgent(app, 'remembers', {
          shielding_settings: { pre_completion_plugins: [], post_completion_plugins: [] },
        });
        await upsert(app, 'Svc.Configuration', 'appConfigurations', key, { key, value: '[]' });
      }
    },
  );
});
