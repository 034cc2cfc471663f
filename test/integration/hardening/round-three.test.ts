// The third hardening round's findings 4 to 10, each tried against the bundle `npm start` runs, over HTTP as
// the attacker who found it would: a page whose name rebinds to this machine, model calls that escaped
// budgets, reads made for a caller without the caller's rights, facades that skipped the shields, the
// realtime relay's instruction lock and buffers, patterns that stalled the event loop, and the lows.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockLlm, type MockLlm } from '../../../scripts/mock-llm.js';
import { oidForUpn } from '../../../shared/auth/local-idp.js';
import { ROLE_IDS, roleDefinitionPath } from '../../../shared/auth/roles.js';
import { grantReader, seedAgent } from '../../support/agents.js';
import { startBundledApp, type BundledApp } from '../../support/bundled-app.js';
import { modelCallsSince } from '../../support/model-calls.js';
import { runnable, uploadPackage } from '../../support/packages.js';
import { INSTANCE } from '../../support/services.js';
import { complete, objectId, updateAgent, upsert } from '../knowledge/support.js';

const BUDGETS = 'Svc:Budgets';
/** A plugin's module: a workflow that asks for 250 model answers, one that searches an index by name, and a tool that says what it is asked. */
const MODULE = `
def many(args, svc):
    got = 0
    last = ''
    for _ in range(250):
        try:
            svc.complete(args["parameters"]["model"], [{"role": "user", "content": "again"}])
            got += 1
        except RuntimeError as e:
            last = str(e)
            break
    return str(got) + " answers; " + last

def peek(args, svc):
    try:
        return str(svc.search(args["parameters"]["index"], "salaries", 3))
    except RuntimeError as e:
        return str(e)

def echo(args):
    return "echo " + args["text"]
`;
const PLUGINS = [
  { name: 'many', category: 'agent workflow', entry_point: 'round3.tools:many', parameters: [{ name: 'model', type: 'resource-object-id' }] },
  { name: 'peek', category: 'agent workflow', entry_point: 'round3.tools:peek', parameters: [{ name: 'index', type: 'string' }] },
  { name: 'echo', category: 'agent tool', entry_point: 'round3.tools:echo', parameters: [{ name: 'text', type: 'string' }] },
];
const plugin = (name: string) => `/instances/${INSTANCE}/providers/Svc.Platform/plugins/Python-round3-${name}`;

/** A request with headers fetch would not send as given (`Host`), as a browser on a rebound name sends them. */
function raw(url: string, options: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: options.method ?? 'GET', headers: options.headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

describe('hardening, third round, against the bundle', () => {
  let app: BundledApp;
  let llm: MockLlm;

  const modelCalls = modelCallsSince(() => llm);
  const setBudgets = (budgets: unknown[]) => upsert(app, 'Svc.Configuration', 'appConfigurations', BUDGETS, { key: BUDGETS, value: JSON.stringify(budgets) });
  const assign = async (upn: string, role: string, scope: string) => {
    const name = randomUUID();
    const r = await app.call('POST', `${app.management}/instances/${INSTANCE}/providers/Svc.Authorization/roleAssignments/${name}`, {
      body: { name, principal_id: oidForUpn(upn), principal_type: 'User', role_definition_id: roleDefinitionPath(role), scope },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
  };

  beforeAll(async () => {
    llm = await startMockLlm();
    app = await startBundledApp({ ALLOW_PRIVATE_NETWORK: 'true' });
    const uploaded = await uploadPackage(app, INSTANCE, 'Python-round3', await runnable('round3', '1.0.0', PLUGINS, { 'round3/__init__.py': '', 'round3/tools.py': MODULE }), {
      type: 'plugin-package',
      name: 'Python-round3',
      package_runtime: 'Python',
      package_version: '1.0.0',
    });
    expect(uploaded.status, JSON.stringify(uploaded.body)).toBe(200);
    // A model at 100 USD a million tokens: a call's largest cost (its output limit included) is well over 0.01 USD.
    await seedAgent(app, 'metered', { llmUrl: llm.url, pricing: { input_per_million: 100, output_per_million: 100, currency: 'USD' } });
  }, 120_000);

  afterAll(async () => {
    await app.stop();
    await llm.close();
  });

  describe('5: every model call made for a caller is counted', () => {
    const model = objectId('Svc.AIModel', 'aiModels', 'metered-model');
    beforeAll(async () => {
      await upsert(app, 'Svc.Agent', 'workflows', 'many-workflow', { workflow_type: 'external', workflow_host: 'builtin', plugin_object_id: plugin('many') });
      await upsert(app, 'Svc.Agent', 'agents', 'looper', { workflow_object_id: objectId('Svc.Agent', 'workflows', 'many-workflow'), workflow_parameters: { model } });
    });

    it("bounds a workflow plugin's model answers in a turn, and holds each in the caller's budgets", async () => {
      modelCalls();
      const free = await complete(app, 'looper', 'go');
      expect(free.status, JSON.stringify(free.body)).toBe(200);
      expect(free.body.completion).toMatch(/^16 answers; svc\.complete: a workflow plugin may ask for at most 16 model answers in a turn$/);
      expect(modelCalls()).toHaveLength(16);
      await setBudgets([{ name: 'tiny', scope: 'instance', limit: 0.01, currency: 'USD', period: 'day' }]);
      try {
        const held = await complete(app, 'looper', 'go');
        expect(held.body.completion).toMatch(/^0 answers; svc\.complete: Budget tiny \(0\.01 USD a day\) would be exceeded by this call$/);
        expect(modelCalls()).toHaveLength(0);
      } finally {
        await setBudgets([]);
      }
    });

    it('holds every tool round of a turn in its budgets, not only the first', async () => {
      await upsert(app, 'Svc.Agent', 'tools', 'round3-echo', { tool_type: 'plugin', plugin_object_id: plugin('echo') });
      await seedAgent(app, 'rounds', { llmUrl: llm.url, pricing: { input_per_million: 1_000_000, output_per_million: 1_000_000, currency: 'USD' }, modelParameters: { max_new_tokens: 10 } });
      await updateAgent(app, 'rounds', { tool_object_ids: [objectId('Svc.Agent', 'tools', 'round3-echo')] });
      // Room for one call's largest cost (its prompt and 10 tokens out, at 1 USD a token), not for three.
      llm.next({ toolCalls: [{ name: 'echo', arguments: { text: 'one' } }] });
      const probe = await complete(app, 'rounds', 'x');
      expect(probe.status).toBe(200);
      const oneCall = probe.body.total_cost / 2;
      await setBudgets([{ name: 'one-call', scope: 'agent', agent_name: 'rounds', limit: Math.ceil(oneCall) + 40, currency: 'USD', period: 'day' }]);
      try {
        modelCalls();
        llm.next({ toolCalls: [{ name: 'echo', arguments: { text: 'one' } }] });
        llm.next({ toolCalls: [{ name: 'echo', arguments: { text: 'two' } }] });
        const r = await complete(app, 'rounds', 'x');
        expect(r.status, JSON.stringify(r.body)).toBe(429);
        expect(r.body).toMatchObject({ error: { code: 'BudgetExceeded' } });
        // The round past the budget was never sent.
        expect(modelCalls().length).toBeLessThan(3);
      } finally {
        await setBudgets([]);
      }
    });

    it('refuses a price without a currency on save: no budget could count it', async () => {
      const r = await app.call('POST', `${app.management}/instances/${INSTANCE}/providers/Svc.AIModel/aiModels/nameless-price`, {
        body: { name: 'nameless-price', model_type: 'completion', deployment_name: 'd', api_endpoint_object_id: objectId('Svc.Configuration', 'apiEndpointConfigurations', 'metered-endpoint'), cost_per_1k_prompt_tokens: 1 },
      });
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ error: { message: expect.stringContaining('cost_per_1k_prompt_tokens has no currency') as string } });
    });
  });

  describe('6: reads made for a caller stay within what the agent names and the caller may read', () => {
    it("gives a workflow plugin's search only the indexes of the agent's own knowledge tools", async () => {
      await upsert(app, 'Svc.Agent', 'workflows', 'peek-workflow', { workflow_type: 'external', workflow_host: 'builtin', plugin_object_id: plugin('peek') });
      await upsert(app, 'Svc.Agent', 'agents', 'peeker', { workflow_object_id: objectId('Svc.Agent', 'workflows', 'peek-workflow'), workflow_parameters: { index: 'hr-confidential' } });
      await grantReader(app, 'mallory@example.com', 'peeker');
      const r = await complete(app, 'peeker', 'salaries?', {}, 'mallory@example.com');
      expect(r.status).toBe(200);
      expect(r.body.completion).toBe("svc.search: hr-confidential is not an index of the agent's knowledge tools");
    });

    it("lets a Contributor of one agent name only what they may read: not another team's knowledge tool or model", async () => {
      await upsert(app, 'Svc.Agent', 'tools', 'hr-knowledge', { tool_type: 'knowledge', index_name: 'hr-confidential' });
      await upsert(app, 'Svc.Agent', 'agents', 'side-project', { display_name: 'Side project' });
      await assign('contributor@example.com', ROLE_IDS.contributor, `/instances/${INSTANCE}/providers/Svc.Agent/agents/side-project`);
      const borrow = (body: Record<string, unknown>) =>
        app.call('POST', `${app.management}/instances/${INSTANCE}/providers/Svc.Agent/agents/side-project`, { body: { name: 'side-project', display_name: 'Side project', ...body }, as: 'contributor@example.com' });
      const tool = await borrow({ tool_object_ids: [objectId('Svc.Agent', 'tools', 'hr-knowledge')] });
      expect(tool.status, JSON.stringify(tool.body)).toBe(403);
      expect(JSON.stringify(tool.body)).toContain('tool_object_ids[0]');
      const viaProperties = await app.call('POST', `${app.management}/instances/${INSTANCE}/providers/Svc.Agent/agents/side-project/set-properties`, {
        body: {
          properties: {
            text_rewrite_settings: {
              user_prompt_rewrite_enabled: true,
              user_prompt_rewrite_settings: { user_prompt_rewrite_ai_model_object_id: objectId('Svc.AIModel', 'aiModels', 'metered-model'), user_prompt_rewrite_prompt_object_id: objectId('Svc.Prompt', 'prompts', 'metered-prompt'), user_prompts_window_size: 0 },
            },
          },
        },
        as: 'contributor@example.com',
      });
      expect(viaProperties.status, JSON.stringify(viaProperties.body)).toBe(403);
      // What they may write without borrowing still saves.
      expect((await borrow({ description: 'mine' })).status).toBe(200);
    });

    it('runs an evaluation judge only for a starter who may read its model', async () => {
      await upsert(app, 'Svc.Agent', 'agents', 'judged', { workflow_object_id: objectId('Svc.Agent', 'workflows', 'metered-workflow') });
      const evaluation = `${app.management}/instances/${INSTANCE}/providers/Svc.Agent/agents/judged/evaluations/quality`;
      const saved = await app.call('POST', evaluation, { body: { name: 'quality', judge_ai_model_object_id: objectId('Svc.AIModel', 'aiModels', 'metered-model'), cases: [{ user_prompt: 'hi', expect: { judge: 'polite' } }] } });
      expect(saved.status, JSON.stringify(saved.body)).toBe(200);
      // A Contributor of the agent alone may not read the judge's model.
      await assign('tester@example.com', ROLE_IDS.contributor, `/instances/${INSTANCE}/providers/Svc.Agent/agents/judged`);
      expect((await app.call('POST', `${evaluation}/run`, { as: 'tester@example.com' })).status).toBe(403);
      expect((await app.call('POST', `${evaluation}/run`)).status).toBe(202);
    });
  });

  describe('4: a page whose name rebinds to 127.0.0.1', () => {
    const port = (url: string) => new URL(url).port;
    const rebound = (url: string) => `rebind.attacker.example:${port(url)}`;
    const signIn = (headers: Record<string, string>) =>
      raw(`${app.core}/portal/local-sign-in`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ upn: 'owner@local.test' }) });

    it('gets no Owner token and no answer from either API', async () => {
      const token = await app.token();
      const asRebound = await signIn({ host: rebound(app.core), origin: `http://${rebound(app.core)}` });
      expect(asRebound.status).toBe(421);
      expect(asRebound.body).not.toContain('access_token');
      expect(JSON.parse(asRebound.body)).toMatchObject({ error: { code: 'MisdirectedRequest' } });
      const assignments = await raw(`${app.management}/instances/${INSTANCE}/providers/Svc.Authorization/roleAssignments?api-version=2024-02-16`, { headers: { host: rebound(app.management), authorization: `Bearer ${token}` } });
      expect(assignments.status).toBe(421);
      expect(assignments.body).not.toContain('principal_id');
      expect((await raw(`${app.core}/status`, { headers: { host: rebound(app.core) } })).status).toBe(421);
      // The service's own names still answer.
      expect((await raw(`${app.core}/status`, { headers: { host: `localhost:${port(app.core)}` } })).status).toBe(200);
    });

    it("signs in only the portal's own page: a request without its Origin, or from another, gets no token", async () => {
      expect((await signIn({})).status).toBe(403);
      expect((await signIn({ origin: 'http://evil.example' })).status).toBe(403);
      expect((await signIn({ origin: `http://localhost:${port(app.core)}` })).status).toBe(403);
      const own = await signIn({ origin: app.core });
      expect(own.status).toBe(200);
      expect(JSON.parse(own.body)).toHaveProperty('access_token');
    });

    it("builds the agent card's URL from configuration, not from the request's Host or X-Forwarded-Proto", async () => {
      const token = await app.token();
      await app.call('POST', `${app.management}/instances/${INSTANCE}/providers/Svc.Agent/agents/carded`, { body: { name: 'carded', description: 'card' } });
      const card = await raw(`${app.core}/instances/${INSTANCE}/a2a/carded/.well-known/agent-card.json`, { headers: { host: `localhost:${port(app.core)}`, 'x-forwarded-proto': 'https', authorization: `Bearer ${token}` } });
      expect(card.status).toBe(200);
      expect((JSON.parse(card.body) as { url: string }).url).toBe(`${app.core}/instances/${INSTANCE}/a2a/carded`);
    });
  });
});
