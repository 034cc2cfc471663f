// Agent templates: the built-in ones listed and read-only, create-agent checking every parameter before it
// creates anything, and a good call giving a working agent whose creator is its Owner.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockLlm, type MockLlm } from '../../../scripts/mock-llm.js';
import { startMcpServer, type TestMcpServer } from '../../../scripts/mock-mcp.js';
import { oidForUpn } from '../../../shared/auth/local-idp.js';
import { ROLE_IDS, roleDefinitionPath } from '../../../shared/providers/types/roles.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { processPipeline, serveDocuments } from '../knowledge/support.js';
import { INSTANCE } from '../../support/services.js';

const MAKER = 'maker@example.com';

describe('agent templates', () => {
  let app: TestApp;
  let llm: MockLlm;
  let mcp: TestMcpServer;
  const id = (type: string, name: string) => `/instances/${INSTANCE}/providers/${type}/${name}`;
  const templates = (path = '') => `${app.management}${id('Svc.Agent/agentTemplates', '').slice(0, -1)}${path}`;
  const model = () => id('Svc.AIModel/aiModels', 'tpl-model');
  const createAgent = (template: string, parameters: Record<string, unknown>, as = MAKER) =>
    app.call('POST', templates(`/${template}/create-agent`), { body: { parameters }, as });
  const exists = async (type: string, name: string) =>
    (await app.call('GET', `${app.management}${id(type, name)}`)).status === 200;

  beforeAll(async () => {
    [llm, mcp] = await Promise.all([startMockLlm(), startMcpServer()]);
    app = await startTestApp({ ALLOW_PRIVATE_NETWORK: 'true' });
    const post = async (type: string, name: string, body: Record<string, unknown>) =>
      expect((await app.call('POST', `${app.management}${id(type, name)}`, { body: { name, ...body } })).status).toBe(
        200,
      );
    await post('Svc.Configuration/apiEndpointConfigurations', 'tpl-endpoint', {
      category: 'LLM',
      provider: 'openai',
      url: `${llm.url}/v1`,
      authentication_type: 'None',
    });
    await post('Svc.AIModel/aiModels', 'tpl-model', {
      model_type: 'completion',
      deployment_name: 'tpl',
      api_endpoint_object_id: id('Svc.Configuration/apiEndpointConfigurations', 'tpl-endpoint'),
      capabilities: ['tools'],
    });
    await post('Svc.AIModel/aiModels', 'tpl-embedding', {
      model_type: 'embedding',
      deployment_name: 'tpl-embed',
      api_endpoint_object_id: id('Svc.Configuration/apiEndpointConfigurations', 'tpl-endpoint'),
    });
    // The maker may create resources (Contributor on the instance) but holds no role on any agent.
    const name = randomUUID();
    await post('Svc.Authorization/roleAssignments', name, {
      principal_id: oidForUpn(MAKER),
      principal_type: 'User',
      role_definition_id: roleDefinitionPath(ROLE_IDS.contributor),
      scope: `/instances/${INSTANCE}`,
    });
  });
  afterAll(async () => {
    await app.close();
    await Promise.all([llm.close(), mcp.close()]);
  });

  it('lists the two built-in templates, which are read-only', async () => {
    const listed = await app.call('GET', templates());
    expect(listed.status).toBe(200);
    const names = (listed.body as { resource: { name: string } }[]).map((e) => e.resource.name);
    expect(names).toEqual(expect.arrayContaining(['knowledge-assistant', 'mcp-tool-agent']));
    const one = await app.call('GET', templates('/mcp-tool-agent'));
    expect(one.body).toMatchObject({
      resource: {
        type: 'agent-template',
        parameters: expect.any(Array) as unknown,
        resources: expect.any(Array) as unknown,
      },
    });
    expect(
      (
        await app.call('POST', templates('/mcp-tool-agent'), {
          body: {
            name: 'mcp-tool-agent',
            parameters: [{ name: 'agent_name', type: 'string' }],
            resources: [{ type: 'agent', name: '{{agent_name}}' }],
          },
        })
      ).status,
    ).toBe(409);
    expect((await app.call('DELETE', templates('/mcp-tool-agent'))).status).toBe(409);
  });

  it('creates nothing for a missing or an ill-typed parameter, and names it', async () => {
    const missing = await createAgent('mcp-tool-agent', {
      agent_name: 'half',
      completion_model_object_id: model(),
      allowed_tools: ['add'],
    });
    expect(missing.status).toBe(400);
    expect(JSON.stringify(missing.body)).toContain('parameters.mcp_url');
    const illTyped = await createAgent('mcp-tool-agent', {
      agent_name: 'half',
      completion_model_object_id: model(),
      mcp_url: mcp.url,
      allowed_tools: 'add',
    });
    expect(illTyped.status).toBe(400);
    expect(JSON.stringify(illTyped.body)).toMatch(/parameters\.allowed_tools.*must be an array/);
    const unknownModel = await createAgent('mcp-tool-agent', {
      agent_name: 'half',
      completion_model_object_id: id('Svc.AIModel/aiModels', 'nope'),
      mcp_url: mcp.url,
      allowed_tools: ['add'],
    });
    expect(unknownModel.status).toBe(400);
    for (const [type, name] of [
      ['Svc.Agent/agents', 'half'],
      ['Svc.Agent/tools', 'half-tools'],
      ['Svc.Prompt/prompts', 'half-prompt'],
      ['Svc.Agent/workflows', 'half-workflow'],
    ] as const) {
      expect(await exists(type, name), `${type}/${name}`).toBe(false);
    }
  });

  it('gives a working agent over an MCP server, owned by its creator', async () => {
    const created = await createAgent('mcp-tool-agent', {
      agent_name: 'calc',
      completion_model_object_id: model(),
      mcp_url: mcp.url,
      allowed_tools: ['add'],
      instructions: 'You add numbers.',
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect((created.body as { object_ids: string[] }).object_ids).toEqual([
      id('Svc.Agent/tools', 'calc-tools'),
      id('Svc.Prompt/prompts', 'calc-prompt'),
      id('Svc.Agent/workflows', 'calc-workflow'),
      id('Svc.Agent/agents', 'calc'),
    ]);
    const agent = await app.call('GET', `${app.management}${id('Svc.Agent/agents', 'calc')}`, { as: MAKER });
    expect((agent.body as { roles: string[] }).roles).toContain('Owner');
    const answer = await app.call('POST', `${app.core}/instances/${INSTANCE}/completions`, {
      body: { agent_name: 'calc', user_prompt: '/call calc-tools__add {"a": 2, "b": 3}' },
      as: MAKER,
    });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect((answer.body as { completion: string }).completion).toContain('Tools said: 5');
    expect(mcp.calls.some((c) => c.tool === 'add')).toBe(true);
    // The same agent again: 409, and nothing else was created or changed.
    const again = await createAgent('mcp-tool-agent', {
      agent_name: 'calc',
      completion_model_object_id: model(),
      mcp_url: mcp.url,
      allowed_tools: ['add'],
    });
    expect(again.status).toBe(409);
  });

  it('creates the knowledge assistant whole, and it answers from the page once the pipeline has run', async () => {
    const web = await serveDocuments();
    try {
      const page = `${web.url}/handbook/leave.txt`;
      web.files.set('/handbook/leave.txt', {
        bytes: Buffer.from('Every employee has thirty days of paid leave a year.'),
        type: 'text/plain',
      });
      const created = await createAgent('knowledge-assistant', {
        agent_name: 'handbook',
        source_urls: [`${web.url}/handbook/`],
        page_urls: [page],
        completion_model_object_id: model(),
        embedding_model_object_id: id('Svc.AIModel/aiModels', 'tpl-embedding'),
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      expect((created.body as { object_ids: string[] }).object_ids).toHaveLength(6);
      expect((await processPipeline(app, 'handbook-pipeline')).status).toBe('Completed');
      const answer = await app.call('POST', `${app.core}/instances/${INSTANCE}/completions`, {
        body: { agent_name: 'handbook', user_prompt: 'How many days of leave do I get?' },
        as: MAKER,
      });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      expect((answer.body as { citations: { source?: string }[] }).citations.map((c) => c.source)).toContain(page);
    } finally {
      await web.close();
    }
  });

  it('serves a template of your own, with typed parameters', async () => {
    const body = {
      name: 'greeter',
      // agent_name is a parameter of every template, declared or not; types may be named by provider path.
      parameters: [
        { name: 'greeting', type: 'string', default_value: 'Hello' },
        { name: 'history', type: 'int' },
      ],
      resources: [
        { type: 'Svc.Prompt/prompts', name: '{{agent_name}}-prompt', prefix: '{{greeting}}, I am {{agent_name}}.' },
        {
          type: 'workflow',
          name: '{{agent_name}}-workflow',
          workflow_type: 'chat',
          workflow_host: 'builtin',
          main_ai_model_object_id: model(),
          main_prompt_object_id: '/instances/{{instance_id}}/providers/Svc.Prompt/prompts/{{agent_name}}-prompt',
        },
        {
          type: 'agent',
          name: '{{agent_name}}',
          workflow_object_id: '/instances/{{instance_id}}/providers/Svc.Agent/workflows/{{agent_name}}-workflow',
          conversation_history_settings: { enabled: true, max_history: '{{history}}' },
        },
      ],
    };
    expect((await app.call('POST', templates('/greeter'), { body })).status).toBe(200);
    expect((await createAgent('greeter', { agent_name: 'hi', history: 'five' })).status).toBe(400);
    const noName = await createAgent('greeter', { history: 5 });
    expect(noName.status).toBe(400);
    expect(JSON.stringify(noName.body)).toContain('parameters.agent_name');
    expect(await exists('Svc.Prompt/prompts', 'hi-prompt')).toBe(false);
    expect((await createAgent('greeter', { agent_name: 'hi', history: 5 })).status).toBe(201);
    expect((await app.call('GET', `${app.management}${id('Svc.Prompt/prompts', 'hi-prompt')}`)).body).toMatchObject({
      resource: { prefix: 'Hello, I am hi.' },
    });
    expect((await app.call('GET', `${app.management}${id('Svc.Agent/agents', 'hi')}`)).body).toMatchObject({
      resource: { conversation_history_settings: { max_history: 5 } },
    });
  });
});
