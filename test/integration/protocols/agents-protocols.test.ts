// The agents as an MCP server and as A2A agents, called with the official MCP SDK client and the A2A
// project's JavaScript client: tools and cards for exactly the agents the caller may use, answers from the
// completion pipeline, tasks sent, streamed, read and cancelled, quotas shared, usage recorded per protocol.
import { randomUUID } from 'node:crypto';
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockLlm, textOf, type MockLlm } from '../../../scripts/mock-llm.js';
import { grantReader, seedAgent } from '../../support/agents.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { INSTANCE } from '../../support/services.js';

const QUOTAS = 'Svc:Quota:Definitions';

describe('agents over MCP and A2A', () => {
  let app: TestApp;
  let llm: MockLlm;
  const usage = () => app.services.store.container('usage');
  const usageOf = async (operationId: string, upn = 'owner@local.test') => usage().read(upn, operationId);

  beforeAll(async () => {
    llm = await startMockLlm();
    app = await startTestApp({ MODEL_MAX_RETRIES: '0' });
    await seedAgent(app, 'helper', { llmUrl: llm.url, history: { enabled: true, max_history: 10 } });
    await seedAgent(app, 'other', { llmUrl: llm.url });
    await grantReader(app, 'reader@example.com', 'helper');
  });
  afterAll(async () => {
    await app.close();
    await llm.close();
  });

  describe('MCP', () => {
    const connect = async (token: string) => {
      const client = new McpClient({ name: 'test-client', version: '1.0.0' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${app.core}/instances/${INSTANCE}/mcp/agents`), {
          requestInit: { headers: { authorization: `Bearer ${token}` } },
        }),
      );
      return client;
    };

    it('lists one tool per agent the caller may use, and answers a call with the completion', async () => {
      const owner = await connect(await app.token());
      const { tools } = await owner.listTools();
      expect(tools.map((t) => t.name)).toEqual(['helper', 'other']);
      expect(tools[0]?.inputSchema).toMatchObject({
        type: 'object',
        properties: { prompt: { type: 'string' }, session_id: { type: 'string' } },
        required: ['prompt'],
      });
      const result = await owner.callTool({ name: 'helper', arguments: { prompt: 'hello over MCP' } });
      expect(result.isError).toBeFalsy();
      expect(result.content).toEqual([{ type: 'text', text: 'Echo: hello over MCP' }]);
      const operationId = (result._meta as { operation_id: string }).operation_id;
      expect((await usageOf(operationId))?.protocol).toBe('mcp');
      await owner.close();

      const reader = await connect(await app.token('reader@example.com'));
      expect((await reader.listTools()).tools.map((t) => t.name)).toEqual(['helper']);
      const refused = await reader.callTool({ name: 'other', arguments: { prompt: 'not mine' } });
      expect(refused.isError).toBe(true);
      expect(JSON.stringify(refused.content)).toMatch(/Tool other not found/);
      await reader.close();
    });

    it("continues one of the caller's sessions, and refuses another user's", async () => {
      const session = (
        (await app.call('POST', `${app.core}/instances/${INSTANCE}/sessions`, { body: { name: 'mcp' } })).body as {
          id: string;
        }
      ).id;
      const owner = await connect(await app.token());
      await owner.callTool({ name: 'helper', arguments: { prompt: 'remember seven', session_id: session } });
      await owner.callTool({ name: 'helper', arguments: { prompt: 'what number?', session_id: session } });
      expect(llm.requests.at(-1)?.body.messages.map((m) => textOf(m.content))).toEqual([
        'You are a test agent.',
        'remember seven',
        'Echo: remember seven',
        'what number?',
      ]);
      await owner.close();
      const reader = await connect(await app.token('reader@example.com'));
      const foreign = await reader.callTool({ name: 'helper', arguments: { prompt: 'peek', session_id: session } });
      expect(foreign.isError).toBe(true);
      expect(JSON.stringify(foreign.content)).toMatch(/not found/);
      await reader.close();
    });

    it('refuses a call without a credential before MCP starts', async () => {
      const r = await fetch(`${app.core}/instances/${INSTANCE}/mcp/agents`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
      expect(r.status).toBe(401);
    });
  });

  describe('A2A', () => {
    const base = (agent: string) => `${app.core}/instances/${INSTANCE}/a2a/${agent}`;
    const clientFor = async (token: string, agent: string) => {
      const fetchImpl: typeof fetch = (input, init) => {
        const headers = new Headers(init?.headers);
        headers.set('authorization', `Bearer ${token}`);
        return fetch(input, { ...init, headers });
      };
      const factory = new ClientFactory({
        // The SDK declares these options as a class it does not export.
        // eslint-disable-next-line @typescript-eslint/no-unsafe-class-instance-assignment
        transports: [new JsonRpcTransportFactory({ fetchImpl, legacyCompat: { enabled: true } })],
        cardResolver: new DefaultAgentCardResolver({ fetchImpl, legacyCompat: { enabled: true } }),
      });
      // The card path is resolved against the URL: with the trailing slash, under the agent.
      return factory.createFromUrl(`${base(agent)}/`);
    };
    const message = (text: string, extra: Record<string, unknown> = {}) =>
      ({
        tenant: '',
        message: {
          messageId: randomUUID(),
          contextId: '',
          taskId: '',
          role: 1,
          parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' }],
          metadata: undefined,
          extensions: [],
          referenceTaskIds: [],
          ...extra,
        },
        configuration: undefined,
        metadata: undefined,
      }) as never;
    const textOfTask = (task: { artifacts?: { parts: { content?: { $case: string; value: unknown } }[] }[] }) =>
      task.artifacts
        ?.flatMap((a) => a.parts.map((p) => (p.content?.$case === 'text' ? String(p.content.value) : '')))
        .join('') ?? '';

    it("serves each usable agent's card, and 404 for any other", async () => {
      const token = await app.token();
      const r = await fetch(`${base('helper')}/.well-known/agent-card.json`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(r.status).toBe(200);
      expect(await r.json()).toMatchObject({
        protocolVersion: '0.3.0',
        name: 'helper',
        url: base('helper'),
        preferredTransport: 'JSONRPC',
        capabilities: { streaming: true },
        skills: [{ id: 'helper' }],
      });
      const reader = await app.token('reader@example.com');
      expect(
        (
          await fetch(`${base('other')}/.well-known/agent-card.json`, {
            headers: { authorization: `Bearer ${reader}` },
          })
        ).status,
      ).toBe(404);
      expect(
        (await fetch(`${base('ghost')}/.well-known/agent-card.json`, { headers: { authorization: `Bearer ${token}` } }))
          .status,
      ).toBe(404);
      expect((await fetch(`${base('helper')}/.well-known/agent-card.json`)).status).toBe(401);
      const rpc = await fetch(base('other'), {
        method: 'POST',
        headers: { authorization: `Bearer ${reader}`, 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: 'x' } }),
      });
      expect(rpc.status).toBe(404);
    });

    it('a message gets a completed task; its context continues the conversation; tasks/get reads it', async () => {
      const client = await clientFor(await app.token(), 'helper');
      const first = (await client.sendMessage(message('my name is Ada'))) as unknown as {
        id: string;
        contextId: string;
        status: { state: number };
        artifacts: never[];
      };
      expect(first.status.state).toBe(3); // completed
      expect(textOfTask(first)).toBe('Echo: my name is Ada');
      expect(first.contextId).toMatch(/^[0-9a-f-]{36}$/);
      const second = (await client.sendMessage(
        message('what is my name?', { contextId: first.contextId }),
      )) as unknown as { id: string; contextId: string };
      expect(second.contextId).toBe(first.contextId);
      expect(llm.requests.at(-1)?.body.messages.map((m) => textOf(m.content))).toEqual([
        'You are a test agent.',
        'my name is Ada',
        'Echo: my name is Ada',
        'what is my name?',
      ]);
      const read = (await client.getTask({ tenant: '', id: first.id, historyLength: 10 })) as unknown as {
        id: string;
        status: { state: number };
        history: unknown[];
      };
      expect(read.id).toBe(first.id);
      expect(read.status.state).toBe(3);
      expect(read.history).toHaveLength(2);
      expect((await usageOf(first.id))?.protocol).toBe('a2a');
      // Another agent's endpoint does not show it, nor does another user.
      await expect((await clientFor(await app.token(), 'other')).getTask({ tenant: '', id: first.id })).rejects.toThrow(
        /not found/i,
      );
      await grantReader(app, 'third@example.com', 'helper');
      const stranger = await clientFor(await app.token('third@example.com'), 'helper');
      await expect(stranger.getTask({ tenant: '', id: first.id })).rejects.toThrow(/not found/i);
    });

    it('streams a task: the task, the answer in chunks, then completed', async () => {
      const client = await clientFor(await app.token(), 'helper');
      const events = [];
      for await (const event of client.sendMessageStream(message('stream over A2A'))) events.push(event);
      const kinds = events.map((e) => e.payload?.$case);
      expect(kinds[0]).toBe('task');
      expect(kinds.at(-1)).toBe('statusUpdate');
      const text = events
        .map((e) =>
          e.payload?.$case === 'artifactUpdate' && e.payload.value.artifact
            ? textOfTask({ artifacts: [e.payload.value.artifact] })
            : '',
        )
        .join('');
      expect(text).toBe('Echo: stream over A2A');
      const last = events.at(-1)?.payload?.value as { status: { state: number }; taskId: string };
      expect(last.status.state).toBe(3);
      expect(
        ((await client.getTask({ tenant: '', id: last.taskId })) as unknown as { status: { state: number } }).status
          .state,
      ).toBe(3);
    });

    it('runs a non-blocking task on the queue and cancels it; an ended task is not cancelable', async () => {
      const client = await clientFor(await app.token(), 'helper');
      llm.next({ hangMs: 20_000 });
      const submitted = (await client.sendMessage({
        ...(message('slow task') as object),
        configuration: {
          acceptedOutputModes: [],
          historyLength: undefined,
          blocking: false,
          taskPushNotificationConfig: undefined,
          returnImmediately: true,
        },
      } as never)) as unknown as { id: string; status: { state: number } };
      expect([1, 2]).toContain(submitted.status.state);
      await expect
        .poll(
          async () =>
            ((await client.getTask({ tenant: '', id: submitted.id })) as unknown as { status: { state: number } })
              .status.state,
          { timeout: 10_000 },
        )
        .toBe(2);
      const cancelled = (await client.cancelTask({ tenant: '', id: submitted.id } as never)) as unknown as {
        status: { state: number };
      };
      expect(cancelled.status.state).toBe(5);
      await expect.poll(() => llm.aborted, { timeout: 5000 }).toBeGreaterThan(0);
      await expect(client.cancelTask({ tenant: '', id: submitted.id } as never)).rejects.toThrow(/ended|cancel/i);
      llm.clear();
    });

    it('counts against the same quota as the Core API and MCP', async () => {
      const set = (value: unknown[]) =>
        app.call(
          'POST',
          `${app.management}/instances/${INSTANCE}/providers/Svc.Configuration/appConfigurations/${QUOTAS}`,
          { body: { name: QUOTAS, key: QUOTAS, value: JSON.stringify(value) } },
        );
      expect(
        (
          await set([
            {
              name: 'Two',
              context: 'CoreAPI:Completions:other',
              metric_partition: 'UserPrincipalName',
              metric_limit: 2,
              metric_window_seconds: 3600,
            },
          ])
        ).status,
      ).toBe(200);
      try {
        expect(
          (
            await app.call('POST', `${app.core}/instances/${INSTANCE}/completions`, {
              body: { user_prompt: 'core', agent_name: 'other' },
            })
          ).status,
        ).toBe(200);
        const client = await clientFor(await app.token(), 'other');
        await client.sendMessage(message('a2a'));
        await expect(client.sendMessage(message('one too many'))).rejects.toThrow(/429|quota/i);
        const mcp = new McpClient({ name: 'test-client', version: '1.0.0' });
        await mcp.connect(
          new StreamableHTTPClientTransport(new URL(`${app.core}/instances/${INSTANCE}/mcp/agents`), {
            requestInit: { headers: { authorization: `Bearer ${await app.token()}` } },
          }),
        );
        const spent = await mcp.callTool({ name: 'other', arguments: { prompt: 'mcp' } });
        expect(spent.isError).toBe(true);
        expect(JSON.stringify(spent.content)).toMatch(/quota/i);
        await mcp.close();
      } finally {
        await set([]);
      }
    });
  });
});
