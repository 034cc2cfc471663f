// The three facades as `npm start` serves them (the bundle, loading the MCP SDK on first use): a streamed
// chat completion and a background response through the official `openai` package, the agents' MCP tools,
// and an A2A task that runs on the bundle's queue worker.
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockLlm, type MockLlm } from '../../../scripts/mock-llm.js';
import { seedAgent } from '../../support/agents.js';
import { startBundledApp, type BundledApp } from '../../support/bundled-app.js';
import { INSTANCE } from '../../support/services.js';

describe('the protocol facades of the bundle', () => {
  let app: BundledApp;
  let llm: MockLlm;

  beforeAll(async () => {
    llm = await startMockLlm();
    app = await startBundledApp({ ALLOW_PRIVATE_NETWORK: 'true' });
    await seedAgent(app, 'bundled', { llmUrl: llm.url });
  });
  afterAll(async () => {
    await app.stop();
    await llm.close();
  });

  it('streams a chat completion and runs a background response', async () => {
    const client = new OpenAI({
      baseURL: `${app.core}/instances/${INSTANCE}/openai/v1`,
      apiKey: await app.token(),
      maxRetries: 0,
    });
    let text = '';
    for await (const chunk of await client.chat.completions.create({
      model: 'bundled',
      messages: [{ role: 'user', content: 'from the bundle' }],
      stream: true,
    }))
      text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('Echo: from the bundle');
    const queued = await client.responses.create({ model: 'bundled', input: 'queued in the bundle', background: true });
    await expect
      .poll(async () => (await client.responses.retrieve(queued.id)).output_text, { timeout: 15_000 })
      .toBe('Echo: queued in the bundle');
  });

  it('lists and calls the agents as MCP tools, and answers A2A', async () => {
    const mcp = new McpClient({ name: 'bundle-test', version: '1.0.0' });
    await mcp.connect(
      new StreamableHTTPClientTransport(new URL(`${app.core}/instances/${INSTANCE}/mcp/agents`), {
        requestInit: { headers: { authorization: `Bearer ${await app.token()}` } },
      }),
    );
    expect((await mcp.listTools()).tools.map((t) => t.name)).toEqual(['bundled']);
    expect((await mcp.callTool({ name: 'bundled', arguments: { prompt: 'tool call' } })).content).toEqual([
      { type: 'text', text: 'Echo: tool call' },
    ]);
    await mcp.close();
    const a2a = await app.call('POST', `${app.core}/instances/${INSTANCE}/a2a/bundled`, {
      body: {
        jsonrpc: '2.0',
        id: 7,
        method: 'message/send',
        params: {
          message: {
            kind: 'message',
            role: 'user',
            messageId: 'm-1',
            parts: [{ kind: 'text', text: 'agent to agent' }],
          },
        },
      },
    });
    expect(a2a.status).toBe(200);
    expect(a2a.body).toMatchObject({
      jsonrpc: '2.0',
      id: 7,
      result: {
        kind: 'task',
        status: { state: 'completed' },
        artifacts: [{ parts: [{ kind: 'text', text: 'Echo: agent to agent' }] }],
      },
    });
  });
});
