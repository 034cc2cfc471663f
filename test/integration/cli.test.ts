// The operator's command-line client (issue 19), run as a user runs it (`npm run cli -- ...`) against the
// service over HTTP: an agent from a file, a completion (whole and streamed), an agent access token, an async
// operation followed to its end, a user's memory exported, an analytics report as a table, and errors.
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockLlm, type MockLlm } from '../../scripts/mock-llm.js';
import { LOCAL_DEFAULT_USER } from '../../shared/auth/local-idp.js';
import { ROLE_IDS, roleDefinitionPath } from '../../shared/providers/types/roles.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { runScript } from '../support/processes.js';
import { INSTANCE } from '../support/services.js';

describe('npm run cli', () => {
  let llm: MockLlm;
  let app: TestApp;
  // The settings the app runs with (its DATA_DIR's key, its issuer), and its addresses as flags.
  const cli = (...args: string[]) =>
    runScript('cli', [...args, '--core', app.core, '--management', app.management], {
      ...app.env,
      CORE_PORT: '0',
      MANAGEMENT_PORT: '0',
    });
  const ref = (type: string, name: string) => `/instances/${INSTANCE}/providers/${type}/${name}`;

  beforeAll(async () => {
    llm = await startMockLlm();
    app = await startTestApp();
  });
  afterAll(async () => {
    await app.close();
    await llm.close();
  });

  it('creates an agent and what it needs from a file, then completes with it, whole and streamed', async () => {
    const file = path.join(app.dataDir, 'agent.json');
    const resources = [
      {
        type: 'Svc.Configuration/apiEndpointConfigurations',
        name: 'cli-endpoint',
        category: 'LLM',
        provider: 'openai',
        url: `${llm.url}/v1`,
        authentication_type: 'None',
        timeout_seconds: 30,
      },
      {
        type: 'Svc.AIModel/aiModels',
        name: 'cli-model',
        model_type: 'completion',
        deployment_name: 'cli-deployment',
        api_endpoint_object_id: ref('Svc.Configuration/apiEndpointConfigurations', 'cli-endpoint'),
      },
      { type: 'Svc.Prompt/prompts', name: 'cli-prompt', prefix: 'You are the CLI agent.' },
      {
        type: 'Svc.Agent/workflows',
        name: 'cli-workflow',
        workflow_type: 'chat',
        workflow_host: 'builtin',
        main_ai_model_object_id: ref('Svc.AIModel/aiModels', 'cli-model'),
        main_prompt_object_id: ref('Svc.Prompt/prompts', 'cli-prompt'),
      },
      {
        type: 'Svc.Agent/agents',
        name: 'cli',
        display_name: 'CLI agent',
        workflow_object_id: ref('Svc.Agent/workflows', 'cli-workflow'),
      },
    ];
    writeFileSync(file, JSON.stringify({ resources }));
    const created = await cli('create', file);
    expect(created.stderr).toBe('');
    expect(created.code).toBe(0);
    expect(created.stdout.trim().split('\n')).toEqual(
      resources.map((r) => `${r.type}/${r.name}  ${ref(r.type, r.name)}`),
    );

    const whole = await cli('complete', 'cli', 'hello', 'there');
    expect(whole).toMatchObject({ code: 0, stdout: 'Echo: hello there\n' });
    // After the answer: the session it opened (to go on with) and the tokens it took.
    const session = /session ([0-9a-f-]{36})/.exec(whole.stderr)?.[1] ?? '';
    expect(whole.stderr).toMatch(/tokens {2}\d+ prompt \+ \d+ completion = \d+/);
    const json = await cli('complete', 'cli', 'and', 'then', '--session', session, '--json');
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({
      session_id: session,
      completion: 'Echo: and then',
      citations: [],
      total_tokens: expect.any(Number) as number,
    });
    const messages = await app.call('GET', `${app.core}/instances/${INSTANCE}/sessions/${session}/messages`);
    expect((messages.body as unknown[]).length).toBe(4);
    const streamed = await cli('complete', 'cli', 'streamed', 'words', '--stream');
    expect(streamed).toMatchObject({ code: 0, stdout: 'Echo: streamed words\n' });
  });

  it('issues an agent access token the Core API accepts, printing the secret alone', async () => {
    const issued = await cli('agent-token', 'cli', '--name', 'ci-bot', '--description', 'from the CLI');
    expect(issued.code).toBe(0);
    expect(issued.stderr).toMatch(/shown this once/);
    const secret = issued.stdout.trim();
    expect(
      (await fetch(`${app.core}/instances/${INSTANCE}/branding`, { headers: { 'x-agent-access-token': secret } }))
        .status,
    ).toBe(200);
  });

  it('follows an async completion to its end', async () => {
    const started = await app.call('POST', `${app.core}/instances/${INSTANCE}/async-completions`, {
      body: { user_prompt: 'in the background', agent_name: 'cli' },
    });
    expect(started.status).toBe(202);
    const { operation_id } = started.body as { operation_id: string };
    const tailed = await cli('tail', operation_id, '--interval', '0.2');
    expect(tailed.code).toBe(0);
    expect(tailed.stdout).toMatch(/Completed: /);
    expect(tailed.stdout.trim().split('\n').at(-1)).toBe('Echo: in the background');
  });

  it("exports a user's memory", async () => {
    expect(
      (
        await app.call('POST', `${app.core}/instances/${INSTANCE}/memory/append`, {
          body: { scope: 'user', content_markdown: 'Prefers green tea' },
          as: 'carol@example.com',
        })
      ).status,
    ).toBe(200);
    const exported = await cli('memory-export', '--user', 'carol@example.com');
    expect(exported.code).toBe(0);
    expect(exported.stdout).toContain('Prefers green tea');
    // The same with TOKEN set to a user's token (as after the quick start): the export still signs for itself.
    const withToken = await runScript(
      'cli',
      ['memory-export', '--user', 'carol@example.com', '--core', app.core, '--management', app.management],
      { ...app.env, CORE_PORT: '0', MANAGEMENT_PORT: '0', TOKEN: await app.token() },
    );
    expect(withToken).toMatchObject({ code: 0, stdout: expect.stringContaining('Prefers green tea') as string });
  });

  it('grants the operator Analytics Reader from a file, then prints an analytics report as a table', async () => {
    const name = randomUUID();
    const grant = {
      type: 'Svc.Authorization/roleAssignments',
      name,
      principal_id: LOCAL_DEFAULT_USER.oid,
      principal_type: 'User',
      role_definition_id: roleDefinitionPath(ROLE_IDS.analyticsReader),
      scope: `/instances/${INSTANCE}`,
    };
    const file = path.join(app.dataDir, 'grant.json');
    writeFileSync(file, JSON.stringify({ resources: [grant] }));
    expect((await cli('create', file)).code).toBe(0);
    const report = await cli('analytics', 'AllAgents');
    expect(report.stderr).toBe('');
    expect(report.code).toBe(0);
    const [header, rule, ...rows] = report.stdout.trim().split('\n');
    expect(header).toMatch(/^agent_name\s+unique_users\s+total_conversations\s+total_tokens/);
    expect(rule).toMatch(/^-+ {2}-+/);
    expect(rows.find((r) => r.startsWith('cli '))).toBeDefined();
    const overview = await cli('analytics', 'overview');
    expect(overview.stdout).toMatch(/^total_tokens\s+[1-9]\d*$/m);
  });

  it('fails with the service’s message and a non-zero code', async () => {
    const missing = await cli('complete', 'no-such-agent', 'hi');
    expect(missing.code).toBe(1);
    // The service's message, in the CLI's words (its argument, not the API's field).
    expect(missing.stderr).toMatch(
      /^400: Agent not found or access denied \(the agent\) \[POST \/instances\/[^ ]+\/completions\]/,
    );
    const badSession = await cli('complete', 'cli', 'hi', '--session', 'not-a-session');
    expect(badSession.stderr).toMatch(/^400: Invalid session_id format \(--session\)|^400: .*--session/);
    const broken = path.join(app.dataDir, 'broken.json');
    writeFileSync(broken, '{"resources": [');
    const unreadable = await cli('create', broken);
    expect(unreadable.code).toBe(1);
    expect(unreadable.stderr).toMatch(/^.*broken\.json: .*JSON/);
    expect(unreadable.stderr).not.toContain('    at ');
    const unknown = await cli('explode');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('unknown command explode');
    expect(unknown.stderr).toContain('npm run cli -- <command>');
  });
});
