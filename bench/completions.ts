// Completion overhead: the same load sent straight to an OpenAI-compatible mock with fixed latency, and
// through POST /completions with a session (history read and written each turn), at concurrency 1 and 32.
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { operationKey } from '../shared/completions/operations.js';
import { startMcpServer } from '../scripts/mock-mcp.js';
import { startMockLlm } from '../scripts/mock-llm.js';
import type { BenchApp } from './app.js';
import { load, paired, type LoadResult, type PairedResult } from './load.js';

const UPSTREAM_LATENCY_MS = 20;

/** The benchmark agent (history on) and what it needs, through the Management API. */
export async function seed(
  app: Pick<BenchApp, 'management' | 'instanceId' | 'auth'>,
  llmUrl: string,
  endpoint: Record<string, unknown> = {},
): Promise<void> {
  const p = (provider: string, type: string, name: string) =>
    `/instances/${app.instanceId}/providers/${provider}/${type}/${name}`;
  const post = async (path: string, body: Record<string, unknown>) => {
    const r = await fetch(`${app.management}${path}`, {
      method: 'POST',
      headers: { ...app.auth, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (r.status !== 200) throw new Error(`${path}: ${r.status} ${await r.text()}`);
  };
  await post(p('Svc.Configuration', 'apiEndpointConfigurations', 'e'), {
    name: 'e',
    provider: 'openai',
    url: `${llmUrl}/v1`,
    authentication_type: 'None',
    ...endpoint,
  });
  await post(p('Svc.AIModel', 'aiModels', 'm'), {
    name: 'm',
    model_type: 'completion',
    deployment_name: 'bench',
    api_endpoint_object_id: p('Svc.Configuration', 'apiEndpointConfigurations', 'e'),
  });
  await post(p('Svc.Prompt', 'prompts', 'p'), { name: 'p', prefix: 'You are a benchmark.' });
  await post(p('Svc.Agent', 'workflows', 'w'), {
    name: 'w',
    workflow_type: 'chat',
    workflow_host: 'builtin',
    main_ai_model_object_id: p('Svc.AIModel', 'aiModels', 'm'),
    main_prompt_object_id: p('Svc.Prompt', 'prompts', 'p'),
  });
  await post(p('Svc.Agent', 'agents', 'bench'), {
    name: 'bench',
    workflow_object_id: p('Svc.Agent', 'workflows', 'w'),
    conversation_history_settings: { enabled: true, max_history: 5 },
  });
}

/**
 * What a budget adds to a completion, at concurrency 1 against a mock answering at once (no session): the
 * same agent with and without a budget covering it, alternating. The budget is checked at admission, the
 * call's largest cost (the tokenizer over its prompt) reserved before the model call and settled with the
 * turn's records.
 */
export async function benchBudget(app: BenchApp, count = 2000): Promise<PairedResult> {
  const llm = await startMockLlm();
  await seed(app, llm.url);
  const p = (provider: string, type: string, name: string) =>
    `/instances/${app.instanceId}/providers/${provider}/${type}/${name}`;
  const post = async (path: string, body: Record<string, unknown>) => {
    const r = await fetch(`${app.management}${path}`, {
      method: 'POST',
      headers: { ...app.auth, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (r.status !== 200) throw new Error(`${path}: ${r.status} ${await r.text()}`);
  };
  const budgets = [
    { name: 'bench', scope: 'agent', agent_name: 'budgeted', limit: 1e9, currency: 'USD', period: 'month' },
  ];
  await post(p('Svc.Configuration', 'appConfigurations', 'Svc:Budgets'), {
    name: 'Svc:Budgets',
    key: 'Svc:Budgets',
    value: JSON.stringify(budgets),
  });
  for (const name of ['unbudgeted', 'budgeted'])
    await post(p('Svc.Agent', 'agents', name), { name, workflow_object_id: p('Svc.Agent', 'workflows', 'w') });
  const url = `${app.core}/instances/${app.instanceId}/completions`;
  const request = (agent: string) => ({
    url,
    method: 'POST' as const,
    headers: { ...app.auth, 'content-type': 'application/json' },
    body: JSON.stringify({ user_prompt: 'How much does a budget add, with a few more words?', agent_name: agent }),
  });
  await paired(request('unbudgeted'), request('budgeted'), 200);
  const result = await paired(request('unbudgeted'), request('budgeted'), count);
  await llm.close();
  return result;
}

export interface StageBench {
  stage: string;
  p50: number;
  p99: number;
  added: { p50: number; p99: number };
}

/**
 * What each optional stage adds at concurrency 1, each against the same agent without it,
 * alternating: shielding with the blocklist (100 terms and 5 expressions, before and after the model), the
 * prompt rewrite (one more model call), and one tool round (an MCP tool call and one more model call).
 */
export async function benchStages(app: BenchApp): Promise<StageBench[]> {
  const llm = await startMockLlm({ latencyMs: UPSTREAM_LATENCY_MS });
  await seed(app, llm.url);
  const p = (provider: string, type: string, name: string) =>
    `/instances/${app.instanceId}/providers/${provider}/${type}/${name}`;
  const post = async (path: string, body: Record<string, unknown>) => {
    const r = await fetch(`${app.management}${path}`, {
      method: 'POST',
      headers: { ...app.auth, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (r.status !== 200) throw new Error(`${path}: ${r.status} ${await r.text()}`);
  };
  const blocklist = [
    ...Array.from({ length: 100 }, (_, i) => `blocked phrase ${i}`),
    '/\\bpassw(or)?d\\b/i',
    '/\\b\\d{3}-\\d{2}-\\d{4}\\b/',
    '/api[_-]?key/i',
    '/secret\\s+project/i',
    '/drop\\s+table/i',
  ];
  await post(p('Svc.Configuration', 'appConfigurations', 'Svc:Shielding:Blocklist'), {
    name: 'Svc:Shielding:Blocklist',
    key: 'Svc:Shielding:Blocklist',
    value: JSON.stringify(blocklist),
  });
  const workflow = p('Svc.Agent', 'workflows', 'w');
  await post(p('Svc.Agent', 'agents', 'plain'), { name: 'plain', workflow_object_id: workflow });
  const plugins = [{ plugin_name: 'Dotnet-Builtin-Blocklist' }];
  await post(p('Svc.Agent', 'agents', 'blocklist'), {
    name: 'blocklist',
    workflow_object_id: workflow,
    shielding_settings: { pre_completion_plugins: plugins, post_completion_plugins: plugins },
  });
  await post(p('Svc.Agent', 'agents', 'rewrite'), {
    name: 'rewrite',
    workflow_object_id: workflow,
    text_rewrite_settings: {
      user_prompt_rewrite_enabled: true,
      user_prompt_rewrite_settings: {
        user_prompt_rewrite_ai_model_object_id: p('Svc.AIModel', 'aiModels', 'm'),
        user_prompt_rewrite_prompt_object_id: p('Svc.Prompt', 'prompts', 'p'),
        user_prompts_window_size: 0,
      },
    },
  });
  // One tool round: the mock model asks the MCP server's `add` whenever it is offered, then answers.
  const mcp = await startMcpServer();
  llm.setToolReflex({ name: 'calc__add', arguments: { a: 1, b: 2 } });
  await post(p('Svc.Agent', 'tools', 'calc'), { name: 'calc', tool_type: 'mcp', url: mcp.url, allowed_tools: ['add'] });
  await post(p('Svc.Agent', 'agents', 'tooled'), {
    name: 'tooled',
    workflow_object_id: workflow,
    tool_object_ids: [p('Svc.Agent', 'tools', 'calc')],
  });
  const url = `${app.core}/instances/${app.instanceId}/completions`;
  const request = (agent: string) => ({
    url,
    method: 'POST' as const,
    headers: { ...app.auth, 'content-type': 'application/json' },
    body: JSON.stringify({ user_prompt: 'How fast is this, with a few more words to screen?', agent_name: agent }),
  });
  const stages: StageBench[] = [];
  for (const [stage, agent] of [
    ['shielding: blocklist before and after the model', 'blocklist'],
    ['prompt rewrite (one more model call)', 'rewrite'],
    ['one tool round: MCP add (one more model call)', 'tooled'],
  ] as const) {
    await paired(request('plain'), request(agent), 50);
    const r = await paired(request('plain'), request(agent), 400);
    stages.push({ stage, p50: r.b.p50, p99: r.b.p99, added: r.added });
  }
  await mcp.close();
  await llm.close();
  return stages;
}

export interface CompletionBench {
  rows: LoadResult[];
  added: { connections: number; p50: number; p99: number; ratio: number }[];
}

export async function benchCompletions(app: BenchApp, seconds: number): Promise<CompletionBench> {
  const llm = await startMockLlm({ latencyMs: UPSTREAM_LATENCY_MS });
  await seed(app, llm.url);
  const session = (await (
    await fetch(`${app.core}/instances/${app.instanceId}/sessions`, {
      method: 'POST',
      headers: { ...app.auth, 'content-type': 'application/json' },
      body: '{"name":"bench"}',
    })
  ).json()) as { id: string };
  const direct = JSON.stringify({
    model: 'bench',
    messages: [
      { role: 'system', content: 'You are a benchmark.' },
      { role: 'user', content: 'How fast is this?' },
    ],
  });
  const through = JSON.stringify({ user_prompt: 'How fast is this?', agent_name: 'bench', session_id: session.id });
  const json = { 'content-type': 'application/json' };

  // Warm both paths (JIT, caches, connection pools) before measuring.
  await load('warm-up', `${app.core}/instances/${app.instanceId}/completions`, {
    seconds: 3,
    connections: 8,
    method: 'POST',
    headers: { ...app.auth, ...json },
    body: through,
  });

  const rows: LoadResult[] = [];
  const added: CompletionBench['added'] = [];
  const directRequest = { url: `${llm.url}/v1/chat/completions`, method: 'POST' as const, headers: json, body: direct };
  const throughRequest = {
    url: `${app.core}/instances/${app.instanceId}/completions`,
    method: 'POST' as const,
    headers: { ...app.auth, ...json },
    body: through,
  };

  // Concurrency 1: alternating requests, timed to the microsecond.
  const one = await paired(
    directRequest,
    throughRequest,
    Math.max(400, Math.round((seconds * 1000) / (2 * UPSTREAM_LATENCY_MS))),
  );
  added.push({ connections: 1, p50: one.added.p50, p99: one.added.p99, ratio: one.a.mean / one.b.mean });
  rows.push(
    { label: 'upstream directly, c=1', rps: 1000 / one.a.mean, p50: one.a.p50, p99: one.a.p99, errors: 0 },
    { label: 'POST /completions + session, c=1', rps: 1000 / one.b.mean, p50: one.b.p50, p99: one.b.p99, errors: 0 },
  );

  // Concurrency 32: throughput under load.
  const d = await load('upstream directly, c=32', directRequest.url, {
    seconds,
    connections: 32,
    method: 'POST',
    headers: json,
    body: direct,
  });
  const t = await load('POST /completions + session, c=32', throughRequest.url, {
    seconds,
    connections: 32,
    method: 'POST',
    headers: throughRequest.headers,
    body: through,
  });
  rows.push(d, t);
  added.push({ connections: 32, p50: t.p50 - d.p50, p99: t.p99 - d.p99, ratio: t.rps / d.rps });

  // Status polls read the status container: measured on a completed operation.
  const now = new Date().toISOString();
  const key = operationKey(app.principal.upn, 'bench-op');
  await app.services.store.container('operations').upsert({
    id: key,
    pk: key,
    operation_id: 'bench-op',
    status: 'Completed',
    status_message: 'Completed',
    result: null,
    created_on: now,
    last_updated: now,
    principal: app.principal,
    request: { user_prompt: 'x' },
    trace: {},
    attempts: 1,
  });
  rows.push(
    await load(
      'GET async status (completed), c=1',
      `${app.core}/instances/${app.instanceId}/async-completions/bench-op/status`,
      { seconds, connections: 1, headers: app.auth },
    ),
  );
  await llm.close();
  return { rows, added };
}

/**
 * Time to first byte of a streamed completion: the model sends its first token after 50 ms and the rest
 * over 500 ms; what counts is how long after the model's first token the client has the first `delta`.
 */
export async function benchStreaming(
  app: BenchApp,
  requests = 40,
): Promise<{ p50: number; p99: number; total: number }> {
  const llm = await startMockLlm();
  llm.setStreaming(50, 500);
  await seed(app, llm.url);
  const body = JSON.stringify({ user_prompt: 'How fast is the first token of this answer here?', agent_name: 'bench' });
  const headers = { ...app.auth, 'content-type': 'application/json', accept: 'text/event-stream' };
  const delays: number[] = [];
  let total = 0;
  for (let i = 0; i < requests + 5; i++) {
    const sent = performance.now();
    const first = await new Promise<number>((resolve, reject) => {
      const req = http.request(
        `${app.core}/instances/${app.instanceId}/completions`,
        { method: 'POST', headers, agent: keepAlive },
        (res) => {
          let seen = false;
          res.on('data', (chunk: Buffer) => {
            if (!seen && chunk.toString().includes('event: delta')) {
              seen = true;
              resolve(performance.now());
            }
          });
          res.on('end', () => (total += performance.now() - sent));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
    await new Promise((r) => setTimeout(r, 600));
    // The first 5 warm the path.
    if (i >= 5) delays.push(first - (llm.firstTokens.at(-1) ?? first));
  }
  await llm.close();
  delays.sort((a, b) => a - b);
  const at = (q: number) =>
    Math.round((delays[Math.min(delays.length - 1, Math.floor(q * delays.length))] ?? 0) * 100) / 100;
  return { p50: at(0.5), p99: at(0.99), total: Math.round(total / requests) };
}

const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 1 });
