// Agents as code between two running services (`npm start`, each its own DATA_DIR, instance id and package
// store): an agent with its workflow, prompt, model, endpoint, tool and a data pipeline exported by the CLI on
// one, planned and applied on the other; the agent answers alike on both and every resource reads the same.
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockLlm, type MockLlm } from '../../scripts/mock-llm.js';
import { startMcpServer, type TestMcpServer } from '../../scripts/mock-mcp.js';
import { startBundledApp, type BundledApp } from '../support/bundled-app.js';
import { runScript } from '../support/processes.js';

const SOURCE = '11111111-1111-4111-8111-111111111111';
const TARGET = '22222222-2222-4222-8222-222222222222';

interface Change {
  object_id: string;
  action: string;
  fields: string[];
}

describe('agents as code between two instances', () => {
  let llm: MockLlm;
  let mcp: TestMcpServer;
  let source: BundledApp;
  let target: BundledApp;
  const id = (instance: string, type: string, name: string) => `/instances/${instance}/providers/${type}/${name}`;
  const RESOURCES: [string, string, Record<string, unknown>][] = [];
  const cli = (app: BundledApp, instance: string, ...args: string[]) =>
    runScript('cli', [...args, '--core', app.core, '--management', app.management, '--instance', instance], app.env);

  beforeAll(async () => {
    [llm, mcp] = await Promise.all([startMockLlm(), startMcpServer()]);
    const common = { ALLOW_PRIVATE_NETWORK: 'true' };
    [source, target] = await Promise.all([
      startBundledApp({
        ...common,
        INSTANCE_ID: SOURCE,
        PACKAGE_STORE_PRIVATE_CONTAINER: `src-${randomUUID().slice(0, 8)}`,
      }),
      startBundledApp({
        ...common,
        INSTANCE_ID: TARGET,
        PACKAGE_STORE_PRIVATE_CONTAINER: `dst-${randomUUID().slice(0, 8)}`,
      }),
    ]);
    const ref = (type: string, name: string) => id(SOURCE, type, name);
    RESOURCES.push(
      [
        'Svc.Configuration/apiEndpointConfigurations',
        'promo-endpoint',
        { category: 'LLM', provider: 'openai', url: `${llm.url}/v1`, authentication_type: 'None', timeout_seconds: 30 },
      ],
      [
        'Svc.AIModel/aiModels',
        'promo-model',
        {
          model_type: 'completion',
          deployment_name: 'promo',
          api_endpoint_object_id: ref('Svc.Configuration/apiEndpointConfigurations', 'promo-endpoint'),
        },
      ],
      [
        'Svc.AIModel/aiModels',
        'promo-embedding',
        {
          model_type: 'embedding',
          deployment_name: 'promo-embed',
          api_endpoint_object_id: ref('Svc.Configuration/apiEndpointConfigurations', 'promo-endpoint'),
        },
      ],
      [
        'Svc.Prompt/prompts',
        'promo-prompt',
        { prefix: 'You are the promoted agent. You answer briefly and you cite the handbook when you can.' },
      ],
      [
        'Svc.DataSource/dataSources',
        'promo-source',
        { data_source_type: 'Web', urls: ['https://handbook.example.com/'] },
      ],
      [
        'Svc.DataPipeline/dataPipelines',
        'promo-pipeline',
        {
          data_source_object_id: ref('Svc.DataSource/dataSources', 'promo-source'),
          source_paths: ['https://handbook.example.com/a.html'],
          index_name: 'promo-index',
          embedding_ai_model_object_id: ref('Svc.AIModel/aiModels', 'promo-embedding'),
        },
      ],
      [
        'Svc.Agent/tools',
        'promo-tool',
        {
          tool_type: 'mcp',
          url: mcp.url,
          allowed_tools: ['add'],
          authentication_type: 'None',
          description: 'Looks things up',
        },
      ],
      [
        'Svc.Agent/workflows',
        'promo-workflow',
        {
          workflow_type: 'chat',
          workflow_host: 'builtin',
          main_ai_model_object_id: ref('Svc.AIModel/aiModels', 'promo-model'),
          main_prompt_object_id: ref('Svc.Prompt/prompts', 'promo-prompt'),
        },
      ],
      [
        'Svc.Agent/agents',
        'promo',
        {
          display_name: 'Promoted',
          workflow_object_id: ref('Svc.Agent/workflows', 'promo-workflow'),
          tool_object_ids: [ref('Svc.Agent/tools', 'promo-tool')],
        },
      ],
    );
    for (const [type, name, body] of RESOURCES) {
      const r = await source.call('POST', `${source.management}${id(SOURCE, type, name)}`, { body: { name, ...body } });
      expect(r.status, `${type}/${name}: ${JSON.stringify(r.body)}`).toBe(200);
    }
  }, 120_000);
  afterAll(async () => {
    await Promise.all([source.stop(), target.stop()]);
    await Promise.all([llm.close(), mcp.close()]);
  });

  it('exports, plans (all create), applies, plans again (all unchanged), and the agent answers alike', async () => {
    const file = path.join(source.env.DATA_DIR ?? '', 'promo-1.0.0.zip');
    const took: string[] = [];
    const timed = async <T>(step: string, run: () => Promise<T>) => {
      const started = performance.now();
      const result = await run();
      took.push(`${step} ${Math.round(performance.now() - started)} ms`);
      return result;
    };
    const exported = await timed('export', () =>
      cli(
        source,
        SOURCE,
        'export',
        'promo',
        '1.0.0',
        ...RESOURCES.map(([type, name]) => id(SOURCE, type, name)),
        '--out',
        file,
      ),
    );
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.stdout).toContain(`${RESOURCES.length} resources exported`);

    const changes = async (step: 'plan' | 'apply') => {
      const r = await timed(step, () => cli(target, TARGET, step, file, '--json'));
      expect(r.code, r.stderr).toBe(0);
      return (JSON.parse(r.stdout) as { changes: Change[] }).changes;
    };
    const planned = await changes('plan');
    expect(planned.map((c) => c.action)).toEqual(Array(RESOURCES.length).fill('create'));
    // Object ids name the target; dependencies come first.
    expect(planned.every((c) => c.object_id.startsWith(`/instances/${TARGET}/`))).toBe(true);
    const order = planned.map((c) => c.object_id.split('/').pop());
    expect(order.indexOf('promo-endpoint')).toBeLessThan(order.indexOf('promo-model'));
    expect(order.indexOf('promo-workflow')).toBeLessThan(order.indexOf('promo'));
    expect(planned.find((c) => c.object_id.endsWith('/promo-prompt'))?.fields).toContain('prefix');
    // Planning wrote nothing.
    expect((await target.call('GET', `${target.management}${id(TARGET, 'Svc.Agent/agents', 'promo')}`)).status).toBe(
      404,
    );

    expect((await changes('apply')).map((c) => c.action)).toEqual(Array(RESOURCES.length).fill('create'));
    expect((await changes('plan')).map((c) => c.action)).toEqual(Array(RESOURCES.length).fill('unchanged'));
    expect((await changes('apply')).map((c) => c.action)).toEqual(Array(RESOURCES.length).fill('unchanged'));
    console.log(
      `agents as code, ${RESOURCES.length} resources between two npm start services, each a CLI run (tsx ` +
        `start included): ${took.join(', ')}`,
    );

    // Every resource reads the same on both, but for ids and timestamps.
    const comparable = async (app: BundledApp, instance: string, type: string, name: string) => {
      const r = await app.call('GET', `${app.management}${id(instance, type, name)}`);
      expect(r.status).toBe(200);
      const resource = (r.body as { resource: Record<string, unknown> }).resource;
      for (const field of [
        'object_id',
        'created_on',
        'created_by',
        'updated_on',
        'updated_by',
        'version',
        'virtual_security_group_id',
        'owner_user_id',
      ])
        Reflect.deleteProperty(resource, field);
      return JSON.stringify(resource).replaceAll(instance, '{instance}');
    };
    for (const [type, name] of RESOURCES)
      expect(await comparable(target, TARGET, type, name), `${type}/${name}`).toBe(
        await comparable(source, SOURCE, type, name),
      );

    // The agent answers the same completion on both (the same prompt reached the same model).
    const answer = async (app: BundledApp) => {
      const r = await app.call('POST', `${app.core}/instances/${app === source ? SOURCE : TARGET}/completions`, {
        body: { agent_name: 'promo', user_prompt: 'What is the leave policy?' },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      const { completion, prompt_tokens } = r.body as { completion: string; prompt_tokens: number };
      return { completion, prompt_tokens };
    };
    const [there, here] = [await answer(source), await answer(target)];
    expect(here).toEqual(there);
    expect(here.completion).toContain('leave policy');
  }, 180_000);

  it('refuses a package whose reference dangles, whole', async () => {
    // The workflow without its model: the model is neither in the package nor on a fresh target name.
    const file = path.join(source.env.DATA_DIR ?? '', 'dangling.zip');
    const r = await source.call('POST', `${source.management}${id(SOURCE, 'Svc.Prompt/prompts', 'lonely-prompt')}`, {
      body: { name: 'lonely-prompt', prefix: 'Alone' },
    });
    expect(r.status).toBe(200);
    const w = await source.call('POST', `${source.management}${id(SOURCE, 'Svc.Agent/workflows', 'lonely-workflow')}`, {
      body: {
        name: 'lonely-workflow',
        workflow_type: 'chat',
        workflow_host: 'builtin',
        main_ai_model_object_id: id(SOURCE, 'Svc.AIModel/aiModels', 'not-there'),
        main_prompt_object_id: id(SOURCE, 'Svc.Prompt/prompts', 'lonely-prompt'),
      },
    });
    expect(w.status).toBe(200);
    const exported = await cli(
      source,
      SOURCE,
      'export',
      'dangling',
      '1.0.0',
      id(SOURCE, 'Svc.Prompt/prompts', 'lonely-prompt'),
      id(SOURCE, 'Svc.Agent/workflows', 'lonely-workflow'),
      '--out',
      file,
    );
    expect(exported.code, exported.stderr).toBe(0);
    for (const step of ['plan', 'apply']) {
      const refused = await cli(target, TARGET, step, file);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/400: .*not-there.*neither in the set nor on this instance/);
    }
    // Not even the prompt, which names nothing, was written.
    expect(
      (await target.call('GET', `${target.management}${id(TARGET, 'Svc.Prompt/prompts', 'lonely-prompt')}`)).status,
    ).toBe(404);
  }, 120_000);

  it('never exports a secret', async () => {
    const name = 'Svc:Webhooks:SigningSecret';
    expect(
      (
        await source.call('POST', `${source.management}${id(SOURCE, 'Svc.Configuration/appConfigurations', name)}`, {
          body: { name, key: name, value: 'a-secret-value-1234' },
        })
      ).status,
    ).toBe(200);
    const r = await source.call(
      'POST',
      `${source.management}/instances/${SOURCE}/providers/Svc.Platform/artifactPackages/secrets/export`,
      {
        body: {
          package_version: '1.0.0',
          resource_object_ids: [id(SOURCE, 'Svc.Configuration/appConfigurations', name)],
        },
      },
    );
    expect(r.status).toBe(400);
    expect(JSON.stringify(r.body)).toContain('secrets are never exported');
    expect(JSON.stringify(r.body)).not.toContain('a-secret-value-1234');
  });
});
