// Plugins that run: an agent tool plugin offered to the model by its short name with its declared parameters,
// an external workflow whose plugin answers through `svc`, and the code interpreter with attachments in and
// files out, each through the Core API as a client sees it.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oidForUpn } from '../../../shared/auth/local-idp.js';
import { ROLE_IDS, roleDefinitionPath } from '../../../shared/providers/types/roles.js';
import { startMockLlm, type MockLlm } from '../../../scripts/mock-llm.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { grantReader, seedAgent } from '../../support/agents.js';
import { modelCallsSince } from '../../support/model-calls.js';
import { runnable, uploadPackage } from '../../support/packages.js';
import { INSTANCE } from '../../support/services.js';
import { complete, objectId, updateAgent, upsert } from '../knowledge/support.js';

const plugin = (name: string) => `/instances/${INSTANCE}/providers/Svc.Platform/plugins/Python-acme-${name}`;

const MODULE = `
import json
calls = []

def lookup(args):
    return {"order": args["order_id"], "status": "shipped", "express": args["express"]}

def remember(args):
    calls.append(args["note"])
    return calls

def broken(args):
    raise KeyError("no such order")

def answer(args, svc):
    history = " / ".join(m["content"] for m in args["history"])
    said = svc.complete(args["parameters"]["model"], [{"role": "user", "content": args["user_prompt"]}])
    files = ", ".join(a["file_name"] + "=" + a["text"].strip() for a in args["attachments"])
    completion = said + " | history: " + history + " | files: " + files
    return {"completion": completion, "citations": [{"title": "Week plan", "text": "Monday"}]}

def failing(args, svc):
    return svc.complete("/instances/x/providers/Svc.AIModel/aiModels/none", [{"role": "user", "content": "x"}])
`;

const PLUGINS = [
  {
    name: 'lookup',
    description: 'Looks up an order',
    category: 'agent tool',
    entry_point: 'acme.tools:lookup',
    parameters: [
      { name: 'order_id', type: 'string', description: 'The order' },
      { name: 'express', type: 'bool', description: 'Express shipping', default_value: false },
    ],
  },
  {
    name: 'remember',
    category: 'agent tool',
    entry_point: 'acme.tools:remember',
    parameters: [{ name: 'note', type: 'string' }],
  },
  { name: 'broken', category: 'agent tool', entry_point: 'acme.tools:broken' },
  {
    name: 'answer',
    category: 'agent workflow',
    entry_point: 'acme.tools:answer',
    parameters: [{ name: 'model', type: 'resource-object-id', description: 'The model it asks' }],
    dependencies: [{ selection_type: 'Single', dependency_plugin_names: ['Python-acme-lookup'] }],
  },
  { name: 'failing', category: 'agent workflow', entry_point: 'acme.tools:failing' },
  { name: 'catalogued', category: 'agent tool' },
];

describe('plugins', () => {
  let llm: MockLlm;
  let app: TestApp;
  const modelCalls = modelCallsSince(() => llm);
  const core = (path: string) => `${app.core}/instances/${INSTANCE}${path}`;
  const session = async (as?: string) =>
    (
      (await app.call('POST', core('/sessions'), { body: { name: 'plugins' }, ...(as ? { as } : {}) })).body as {
        id: string;
      }
    ).id;
  const messages = async (id: string, as?: string) =>
    (await app.call('GET', core(`/sessions/${id}/messages`), as ? { as } : {})).body as {
      sender: string;
      text: string;
      content_artifacts?: Record<string, string>[];
    }[];
  const saveTool = (name: string, body: Record<string, unknown>) =>
    app.call('POST', `${app.management}/instances/${INSTANCE}/providers/Svc.Agent/tools/${name}`, {
      body: { name, ...body },
    });

  beforeAll(async () => {
    llm = await startMockLlm();
    app = await startTestApp({ ALLOW_PRIVATE_NETWORK: 'true', PLUGIN_TIMEOUT_SECONDS: '10' });
    const bytes = await runnable('acme', '1.0.0', PLUGINS, { 'acme/__init__.py': '', 'acme/tools.py': MODULE });
    const uploaded = await uploadPackage(app, INSTANCE, 'Python-acme', bytes, {
      type: 'plugin-package',
      name: 'Python-acme',
      package_runtime: 'Python',
      package_version: '1.0.0',
    });
    expect(uploaded.status, JSON.stringify(uploaded.body)).toBe(200);
    await seedAgent(app, 'clerk', { llmUrl: llm.url });
    for (const name of ['lookup', 'remember', 'broken'])
      await upsert(app, 'Svc.Agent', 'tools', name, {
        tool_type: 'plugin',
        plugin_object_id: plugin(name),
        description: `the ${name} plugin`,
      });
    await upsert(app, 'Svc.Agent', 'tools', 'interpreter', { tool_type: 'code-interpreter' });
    await updateAgent(app, 'clerk', {
      tool_object_ids: ['lookup', 'remember', 'broken', 'interpreter'].map((t) => objectId('Svc.Agent', 'tools', t)),
    });
    modelCalls();
  }, 120_000);
  afterAll(async () => {
    await app.close();
    await llm.close();
  });

  it('offers a tool plugin by its short name and declared parameters; the model gets what it returns', async () => {
    const id = await session();
    llm.next({ toolCalls: [{ name: 'lookup', arguments: { order_id: 'A-17' } }] });
    const r = await complete(app, 'clerk', 'Where is order A-17?', { session_id: id });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.completion).toBe('Tools said: {"order":"A-17","status":"shipped","express":false}');
    const [first] = modelCalls();
    const offered = first?.body.tools?.find((t) => t.function.name === 'lookup') as
      { function: { description: string; parameters: unknown } } | undefined;
    expect(offered?.function).toMatchObject({
      description: 'Looks up an order',
      parameters: {
        type: 'object',
        properties: {
          order_id: { type: 'string', description: 'The order' },
          express: { type: 'boolean', default: false },
        },
        required: ['order_id'],
        additionalProperties: false,
      },
    });
    expect(first?.body.tools?.map((t) => t.function.name).sort()).toEqual(['broken', 'lookup', 'python', 'remember']);
    const assistant = (await messages(id)).find((m) => m.sender === 'Assistant');
    expect(assistant?.content_artifacts).toEqual([
      expect.objectContaining({
        type: 'ToolExecution',
        tool_name: 'lookup',
        function_name: 'lookup',
        outcome: 'Succeeded',
      }),
    ]);
  }, 60_000);

  it("gives the model a plugin's failure as the tool result, and the answer stands", async () => {
    llm.next({
      toolCalls: [
        { name: 'broken', arguments: {} },
        { name: 'lookup', arguments: { order_id: 'B', nonsense: 1 } },
      ],
    });
    const r = await complete(app, 'clerk', 'try it');
    expect(r.status).toBe(200);
    expect(r.body.completion).toMatch(
      new RegExp(
        /^Tools said: Error: KeyError: 'no such order' \(tools\.py, line \d+\) \| /.source +
          /Error: nonsense is not a parameter of Python-acme-lookup$/.source,
      ),
    );
  }, 60_000);

  it("keeps nothing of one user's call for another's: a module variable starts empty every call", async () => {
    llm.next({ toolCalls: [{ name: 'remember', arguments: { note: 'alice-secret' } }] });
    expect((await complete(app, 'clerk', 'remember this')).body.completion).toBe('Tools said: ["alice-secret"]');
    await grantReader(app, 'bob@example.com', 'clerk');
    llm.next({ toolCalls: [{ name: 'remember', arguments: { note: 'bob-note' } }] });
    const bob = await complete(app, 'clerk', 'and this', {}, 'bob@example.com');
    expect(bob.body.completion).toBe('Tools said: ["bob-note"]');
  }, 60_000);

  it('counts plugin executions in the tool analytics', async () => {
    const name = randomUUID();
    const assigned = await app.call(
      'POST',
      `${app.management}/instances/${INSTANCE}/providers/Svc.Authorization/roleAssignments/${name}`,
      {
        body: {
          name,
          principal_id: oidForUpn('analyst@example.com'),
          principal_type: 'User',
          role_definition_id: roleDefinitionPath(ROLE_IDS.analyticsReader),
          scope: `/instances/${INSTANCE}`,
        },
      },
    );
    expect(assigned.status).toBe(200);
    const today = new Date().toISOString().slice(0, 10);
    const r = await app.call(
      'POST',
      `${app.management}/instances/${INSTANCE}/providers/Svc.Analytics/analytics/query?api-version=2024-02-16`,
      {
        body: { request_type: 5, filters: { start_date: `${today}T00:00:00Z`, end_date: `${today}T23:59:59Z` } },
        as: 'analyst@example.com',
      },
    );
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const tools = (r.body as { resource: { data: { tool_name: string; usage_count: number }[] } }).resource.data;
    // lookup ran twice (once alone, once beside broken), broken once, remember twice.
    expect(tools).toEqual(
      expect.arrayContaining([
        { tool_name: 'lookup', usage_count: 2 },
        { tool_name: 'broken', usage_count: 1 },
        { tool_name: 'remember', usage_count: 2 },
      ]),
    );
  });

  it('refuses a plugin tool whose plugin cannot run here, saying why', async () => {
    const cases: [string, RegExp][] = [
      [
        `/instances/${INSTANCE}/providers/Svc.Platform/plugins/Dotnet-Builtin-Blocklist`,
        /Dotnet packages are catalogued only, as this service has no \.NET runtime/,
      ],
      [plugin('answer'), /is an agent workflow plugin, not an agent tool plugin/],
      [plugin('catalogued'), /declares no entry_point/],
    ];
    for (const [id, message] of cases) {
      const r = await saveTool('bad-plugin', { tool_type: 'plugin', plugin_object_id: id });
      expect(r.status).toBe(400);
      expect(JSON.stringify(r.body)).toMatch(message);
    }
    // A tool may be saved before its package is uploaded, or without a plugin; an agent cannot use it then.
    expect((await saveTool('later', { tool_type: 'plugin', plugin_object_id: plugin('missing') })).status).toBe(200);
    expect((await saveTool('empty', { tool_type: 'plugin' })).status).toBe(200);
    const r = await app.call('POST', `${app.management}/instances/${INSTANCE}/providers/Svc.Agent/agents/clerk`, {
      body: {
        ...(
          (await app.call('GET', `${app.management}/instances/${INSTANCE}/providers/Svc.Agent/agents/clerk`)).body as {
            resource: object;
          }
        ).resource,
        tool_object_ids: [objectId('Svc.Agent', 'tools', 'empty')],
      },
    });
    expect(r.status).toBe(400);
    expect(JSON.stringify(r.body)).toContain('is a plugin tool without a plugin_object_id');
  });

  it("runs code in a directory holding the attachments; the files it writes become the caller's uploads", async () => {
    const form = new FormData();
    form.append('file', new Blob(['region,amount\nnorth,10\nsouth,32\n'], { type: 'text/csv' }), 'sales.csv');
    form.append('agent_name', 'clerk');
    const upload = await fetch(core('/files/upload'), {
      method: 'POST',
      body: form,
      headers: { authorization: `Bearer ${await app.token()}` },
    });
    const attached = ((await upload.json()) as { object_id: string }).object_id;
    const id = await session();
    const code = [
      'import csv',
      'rows = list(csv.DictReader(open("sales.csv")))',
      'total = sum(int(r["amount"]) for r in rows)',
      'print("total", total)',
      'open("summary.csv", "w").write("total\\n%d\\n" % total)',
    ].join('\n');
    llm.next({ toolCalls: [{ name: 'python', arguments: { code } }] });
    const r = await complete(app, 'clerk', 'Sum the sales', { session_id: id, attachments: [attached] });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.completion).toBe('Tools said: total 42\n\nFiles written (given to the user): summary.csv');
    const assistant = (await messages(id)).find((m) => m.sender === 'Assistant');
    const file = assistant?.content_artifacts?.find((a) => a.type === 'File');
    expect(file).toMatchObject({ type: 'File', file_name: 'summary.csv', content_type: 'text/csv' });
    const fileId = String(file?.file_object_id).split('/').pop();
    const content = await fetch(core(`/files/${fileId}/content`), {
      headers: { authorization: `Bearer ${await app.token()}` },
    });
    expect(await content.text()).toBe('total\n42\n');
    // Another user cannot read it.
    const other = await fetch(core(`/files/${fileId}/content`), {
      headers: { authorization: `Bearer ${await app.token('mallory@example.com')}` },
    });
    expect(other.status).toBe(404);
  }, 60_000);

  describe('an external workflow', () => {
    beforeAll(async () => {
      await upsert(app, 'Svc.Agent', 'workflows', 'planner', {
        workflow_type: 'external',
        workflow_host: 'builtin',
        plugin_object_id: plugin('answer'),
      });
      await upsert(app, 'Svc.Agent', 'workflows', 'failing', {
        workflow_type: 'external',
        workflow_host: 'builtin',
        plugin_object_id: plugin('failing'),
      });
      await updateAgent(app, 'clerk', {
        workflow_object_id: objectId('Svc.Agent', 'workflows', 'planner'),
        workflow_parameters: { model: objectId('Svc.AIModel', 'aiModels', 'clerk-model') },
        conversation_history_settings: { enabled: true, max_history: 5 },
        tool_object_ids: [],
      });
    });

    it("answers through its plugin, whose model calls pass the gateway and count as the turn's tokens", async () => {
      const id = await session();
      const first = await complete(app, 'clerk', 'Plan my week', { session_id: id });
      expect(first.status, JSON.stringify(first.body)).toBe(200);
      expect(first.body.completion).toBe('Echo: Plan my week | history:  | files: ');
      expect(first.body.citations).toEqual([{ id: '1', source: '', title: 'Week plan', text: 'Monday', score: 0 }]);
      expect((first.body as unknown as { prompt_tokens: number }).prompt_tokens).toBeGreaterThan(0);
      const form = new FormData();
      form.append('file', new Blob(['Monday: dentist'], { type: 'text/plain' }), 'notes.txt');
      form.append('agent_name', 'clerk');
      const upload = await fetch(core('/files/upload'), {
        method: 'POST',
        body: form,
        headers: { authorization: `Bearer ${await app.token()}` },
      });
      const attached = ((await upload.json()) as { object_id: string }).object_id;
      const second = await complete(app, 'clerk', 'And next week?', { session_id: id, attachments: [attached] });
      expect(second.body.completion).toBe(
        'Echo: And next week? | history: Plan my week / Echo: Plan my week | history:  | files:  | files: ' +
          'notes.txt=Monday: dentist',
      );
      const [call] = modelCalls().slice(-1);
      expect(call?.body.model).toBe('clerk-deployment');
    }, 60_000);

    it('is a 502 PluginFailed with the reason when its plugin fails', async () => {
      await updateAgent(app, 'clerk', {
        workflow_object_id: objectId('Svc.Agent', 'workflows', 'failing'),
        workflow_parameters: {},
      });
      const r = await complete(app, 'clerk', 'go');
      expect(r.status).toBe(502);
      expect(r.body).toMatchObject({
        error: {
          code: 'PluginFailed',
          message: expect.stringContaining(
            "svc.complete: /instances/x/providers/Svc.AIModel/aiModels/none is not a model the agent's " +
              'workflow_parameters name',
          ) as string,
        },
      });
    }, 60_000);

    it("checks the agent's workflow_parameters against the parameters its plugin declares", async () => {
      const agentUrl = `${app.management}/instances/${INSTANCE}/providers/Svc.Agent/agents/clerk`;
      const current = ((await app.call('GET', agentUrl)).body as { resource: Record<string, unknown> }).resource;
      const bad = async (parameters: Record<string, unknown>, message: string) => {
        const r = await app.call('POST', agentUrl, {
          body: {
            ...current,
            workflow_object_id: objectId('Svc.Agent', 'workflows', 'planner'),
            workflow_parameters: parameters,
          },
        });
        expect(r.status, JSON.stringify(r.body)).toBe(400);
        expect(JSON.stringify(r.body)).toContain(message);
      };
      await bad({}, 'workflow_parameters.model: model is required by Python-acme-answer');
      await bad({ model: 'gpt' }, 'workflow_parameters.model: model must be a resource object id');
      await bad(
        { model: objectId('Svc.AIModel', 'aiModels', 'clerk-model'), extra: 1 },
        'workflow_parameters.extra: extra is not a parameter of Python-acme-answer',
      );
    });

    it('needs its plugin to be an agent workflow plugin', async () => {
      const r = await app.call('POST', `${app.management}/instances/${INSTANCE}/providers/Svc.Agent/workflows/wrong`, {
        body: {
          name: 'wrong',
          workflow_type: 'external',
          workflow_host: 'builtin',
          plugin_object_id: plugin('lookup'),
        },
      });
      expect(r.status).toBe(400);
      expect(JSON.stringify(r.body)).toContain('is an agent tool plugin, not an agent workflow plugin');
      const chat = await app.call(
        'POST',
        `${app.management}/instances/${INSTANCE}/providers/Svc.Agent/workflows/wrong`,
        { body: { name: 'wrong', workflow_type: 'chat', workflow_host: 'builtin' } },
      );
      expect(chat.status).toBe(400);
      expect(JSON.stringify(chat.body)).toContain('main_ai_model_object_id is required for a chat workflow');
    });
  });
});
