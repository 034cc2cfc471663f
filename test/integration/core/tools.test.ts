// Agents that act: the agent's tools offered through function calling, calls run side by side, results back
// to the model, limits on rounds, time and size, failures as results, executions recorded on the message,
// and tool events in the stream. The tools live on an MCP server built with the SDK.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oidForUpn } from '../../../shared/auth/local-idp.js';
import { ROLE_IDS, roleDefinitionPath } from '../../../shared/providers/types/roles.js';
import { startMockLlm, type MockLlm } from '../../../scripts/mock-llm.js';
import { startTestApp, providers, type TestApp } from '../../support/app.js';
import { grantReader, seedAgent } from '../../support/agents.js';
import { startMcpServer, type TestMcpServer } from '../../../scripts/mock-mcp.js';
import { modelCallsSince } from '../../support/model-calls.js';
import { INSTANCE } from '../../support/services.js';
import { complete, objectId, updateAgent, upsert } from '../knowledge/support.js';

interface Artifact {
  type: string;
  tool_name: string;
  function_name: string;
  arguments_sha256: string;
  duration_ms: number;
  outcome: string;
}

describe('tools', () => {
  let llm: MockLlm;
  let mcp: TestMcpServer;
  let app: TestApp;
  const modelCalls = modelCallsSince(() => llm);
  const session = async () =>
    (
      (await app.call('POST', `${app.core}/instances/${INSTANCE}/sessions`, { body: { name: 'tools' } })).body as {
        id: string;
      }
    ).id;
  const artifacts = async (sessionId: string) => {
    const messages = (await app.call('GET', `${app.core}/instances/${INSTANCE}/sessions/${sessionId}/messages`))
      .body as { sender: string; content_artifacts?: Artifact[] }[];
    return messages.filter((m) => m.sender === 'Assistant').flatMap((m) => m.content_artifacts ?? []);
  };

  beforeAll(async () => {
    llm = await startMockLlm();
    mcp = await startMcpServer();
    process.env.SVC_SECRET_MCP_KEY = 'mcp-key-789';
    app = await startTestApp({
      ALLOW_PRIVATE_NETWORK: 'true',
      TOOL_MAX_ROUNDS: '3',
      TOOL_TIME_BUDGET_SECONDS: '1',
      TOOL_RESULT_MAX_CHARS: '200',
    });
    await seedAgent(app, 'actor', { llmUrl: llm.url });
    await upsert(app, 'Svc.Agent', 'tools', 'calc', {
      tool_type: 'mcp',
      url: mcp.url,
      allowed_tools: ['add', 'slow', 'fail', 'repeat'],
      authentication_type: 'APIKey',
      authentication_parameters: { api_key_secret_name: 'SVC_SECRET_MCP_KEY' },
    });
    await updateAgent(app, 'actor', { tool_object_ids: [objectId('Svc.Agent', 'tools', 'calc')] });
    modelCalls();
  });
  afterAll(async () => {
    await app.close();
    await mcp.close();
    await llm.close();
  });

  it("offers the allow-listed tools, runs the model's call and gives the result back for the answer", async () => {
    const id = await session();
    llm.next({ toolCalls: [{ name: 'calc__add', arguments: { a: 2, b: 40 } }] });
    const r = await complete(app, 'actor', 'What is 2 + 40?', { session_id: id });
    expect(r.status).toBe(200);
    expect(r.body.completion).toBe('Tools said: 42');
    const [first, second] = modelCalls();
    expect(first?.body.tools?.map((t) => t.function.name).sort()).toEqual([
      'calc__add',
      'calc__fail',
      'calc__repeat',
      'calc__slow',
    ]);
    expect(second?.body.messages.at(-2)).toMatchObject({
      role: 'assistant',
      tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'calc__add' } }],
    });
    expect(second?.body.messages.at(-1)).toEqual({ role: 'tool', tool_call_id: 'call_1', content: '42' });
    expect(mcp.calls.at(-1)).toEqual({ tool: 'add', args: { a: 2, b: 40 }, authorization: 'Bearer mcp-key-789' });
    const [execution] = await artifacts(id);
    expect(execution).toMatchObject({
      type: 'ToolExecution',
      tool_name: 'calc',
      function_name: 'calc__add',
      outcome: 'Succeeded',
    });
    expect(execution?.arguments_sha256).toMatch(/^[0-9a-f]{64}$/);
    // The arguments themselves are not kept.
    expect(JSON.stringify(await artifacts(id))).not.toContain('"a"');
  });

  it('runs several calls of one round side by side', async () => {
    llm.next({
      toolCalls: [
        { name: 'calc__slow', arguments: { ms: 300 } },
        { name: 'calc__slow', arguments: { ms: 300 } },
        { name: 'calc__add', arguments: { a: 1, b: 1 } },
      ],
    });
    mcp.slow.peak = 0;
    const r = await complete(app, 'actor', 'three things at once');
    expect(r.body.completion).toBe('Tools said: finally | finally | 2');
    // The tool server saw both 300 ms calls running at once (in sequence, the peak would be one).
    expect(mcp.slow.peak).toBe(2);
    modelCalls();
  });

  it('stops offering tools after TOOL_MAX_ROUNDS rounds: the model must answer', async () => {
    const call = { toolCalls: [{ name: 'calc__add', arguments: { a: 1, b: 2 } }] };
    llm.next(call, call, call, call);
    const r = await complete(app, 'actor', 'keep adding');
    expect(r.status).toBe(200);
    const calls = modelCalls();
    expect(calls).toHaveLength(4);
    expect(calls.slice(0, 3).every((c) => Array.isArray(c.body.tools))).toBe(true);
    expect(calls[3]?.body.tools).toBeUndefined();
    llm.clear();
  });

  it(
    'gives the model a failing tool, an unknown function, bad arguments and a tool over the time budget as ' +
      'results',
    async () => {
      const id = await session();
      llm.next({
        toolCalls: [
          { name: 'calc__fail', arguments: {} },
          { name: 'calc__admin_reset', arguments: {} },
          { name: 'calc__slow', arguments: { ms: 3000 } },
        ],
      });
      const r = await complete(app, 'actor', 'try everything', { session_id: id });
      expect(r.status).toBe(200);
      const results = modelCalls()[1]
        ?.body.messages.filter((m) => m.role === 'tool')
        .map((m) => m.content);
      expect(results?.[0]).toContain('the disk is full');
      expect(results?.[1]).toBe('Error: there is no function named calc__admin_reset');
      expect(results?.[2]).toBe('Error: the tool did not answer in time');
      expect(mcp.calls.some((c) => c.tool === 'admin_reset')).toBe(false);
      expect((await artifacts(id)).map((a) => a.outcome)).toEqual(['Failed', 'Failed', 'TimedOut']);
    },
  );

  it('cuts a long result before it reaches the model', async () => {
    llm.next({ toolCalls: [{ name: 'calc__repeat', arguments: { text: 'abcd', times: 1000 } }] });
    await complete(app, 'actor', 'big');
    const tool = modelCalls()[1]?.body.messages.find((m) => m.role === 'tool');
    expect(tool?.content).toBe(`${'abcd'.repeat(50)}\n[cut: the result was 4000 characters, 200 are shown]`);
  });

  it('streams tool starts and ends as comments, then the answer', async () => {
    llm.next({ toolCalls: [{ name: 'calc__add', arguments: { a: 20, b: 22 } }] });
    const res = await fetch(`${app.core}/instances/${INSTANCE}/completions`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${await app.token()}`,
        'content-type': 'application/json',
        accept: 'text/event-stream',
      },
      body: JSON.stringify({ user_prompt: 'add in a stream', agent_name: 'actor' }),
    });
    const text = await res.text();
    const start = text.indexOf(': tool_start {"function_name":"calc__add","tool_name":"calc"}');
    const end = text.indexOf(': tool_end {"type":"ToolExecution","tool_name":"calc","function_name":"calc__add"');
    const delta = text.indexOf('event: delta\ndata: {"text":"Tools said: 42"}');
    expect(start).toBeGreaterThanOrEqual(0);
    expect(end).toBeGreaterThan(start);
    expect(delta).toBeGreaterThan(end);
    expect(text.indexOf('event: completed')).toBeGreaterThan(delta);
    modelCalls();
  });

  it('runs tools in an async completion too', async () => {
    llm.next({ toolCalls: [{ name: 'calc__add', arguments: { a: 5, b: 6 } }] });
    const started = await app.call('POST', `${app.core}/instances/${INSTANCE}/async-completions`, {
      body: { user_prompt: 'add later', agent_name: 'actor' },
    });
    expect(started.status).toBe(202);
    const id = (started.body as { operation_id: string }).operation_id;
    let status: { status: string; result: { completion: string } | null } = { status: 'InProgress', result: null };
    for (
      const until = Date.now() + 15_000;
      status.status === 'InProgress' && Date.now() < until;
      await new Promise((r) => setTimeout(r, 100))
    ) {
      status = (await app.call('GET', `${app.core}/instances/${INSTANCE}/async-completions/${id}/status`))
        .body as typeof status;
    }
    expect(status.status).toBe('Completed');
    expect(status.result?.completion).toBe('Tools said: 11');
    modelCalls();
  });

  it('lets a reader and an agent access token reach exactly that agent and its tools, and no one else', async () => {
    await grantReader(app, 'reader@example.com', 'actor');
    llm.next({ toolCalls: [{ name: 'calc__add', arguments: { a: 3, b: 4 } }] });
    expect((await complete(app, 'actor', 'add for me', {}, 'reader@example.com')).body.completion).toBe(
      'Tools said: 7',
    );
    expect((await complete(app, 'actor', 'add for me', {}, 'stranger@example.com')).status).toBe(403);
    // An agent access token reaches its agent, with that agent's tools, and no other agent.
    const issued = await app.call('POST', `${providers(app, 'Svc.Agent')}/agents/actor/agent-access-tokens`, {
      body: { type: 'agent-access-token', name: 'tool-bot' },
    });
    const token = (issued.body as { resource: string }).resource;
    const withToken = (agent: string) =>
      fetch(`${app.core}/instances/${INSTANCE}/completions`, {
        method: 'POST',
        headers: { 'x-agent-access-token': token, 'content-type': 'application/json' },
        body: JSON.stringify({ user_prompt: 'add by token', agent_name: agent }),
      });
    llm.next({ toolCalls: [{ name: 'calc__add', arguments: { a: 8, b: 9 } }] });
    const byToken = await withToken('actor');
    expect(byToken.status).toBe(200);
    expect(((await byToken.json()) as { completion: string }).completion).toBe('Tools said: 17');
    expect((await withToken('other')).status).toBe(403);
    modelCalls();
  });

  it('computes analytics tool figures: Tools, AgentToolCombinations, avg_tools_used, most_used_tools', async () => {
    const analyst = 'analyst@example.com';
    const name = randomUUID();
    await app.call('POST', `${providers(app, 'Svc.Authorization')}/roleAssignments/${name}`, {
      body: {
        name,
        principal_id: oidForUpn(analyst),
        principal_type: 'User',
        role_definition_id: roleDefinitionPath(ROLE_IDS.analyticsReader),
        scope: `/instances/${INSTANCE}`,
      },
    });
    const query = async (request_type: string, filters: Record<string, unknown> = {}) => {
      const r = await app.call('POST', `${providers(app, 'Svc.Analytics')}/analytics/query?api-version=2024-02-16`, {
        body: { request_type, filters },
        as: analyst,
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return (r.body as { resource: { data: unknown } }).resource.data;
    };
    // Earlier tests ran calc: 1 + 3 + 3 + 3 + 1 + 1 + 1 executions (the unknown function counts for no tool).
    const tools = (await query('Tools')) as { tool_name: string; usage_count: number }[];
    expect(tools.find((t) => t.tool_name === 'calc')?.usage_count).toBeGreaterThanOrEqual(10);
    const combinations = (await query('AgentToolCombinations', { agent_name: 'actor' })) as Record<string, number>;
    expect(combinations.calc).toBeGreaterThan(0);
    const summary = (await query('AgentSummary', { agent_name: 'actor' })) as {
      avg_tools_used: number;
      most_used_tools: string[];
    };
    expect(summary.avg_tools_used).toBeGreaterThan(0);
    expect(summary.most_used_tools[0]).toBe('calc');
  });

  it('refuses on save an mcp tool outside the URL rules, and a plugin tool naming no plugin', async () => {
    const strict = await startTestApp({ ALLOW_PRIVATE_NETWORK: 'false' });
    try {
      const r = await strict.call('POST', `${providers(strict, 'Svc.Agent')}/tools/internal`, {
        body: { name: 'internal', tool_type: 'mcp', url: 'http://127.0.0.1:9/mcp', allowed_tools: ['x'] },
      });
      expect(r.status).toBe(400);
    } finally {
      await strict.close();
    }
    // A plugin tool names a plugin that runs here (core/plugins.test.ts has the rest).
    const r = await app.call('POST', `${providers(app, 'Svc.Agent')}/tools/catalogued`, {
      body: { name: 'catalogued', tool_type: 'plugin', plugin_object_id: 'x' },
    });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({
      error: {
        message: expect.stringContaining('plugin_object_id: x is not a plugin object id of this instance') as string,
      },
    });
  });
});
