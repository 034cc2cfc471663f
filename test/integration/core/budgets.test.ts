// Budgets over HTTP: prices on AI models in usage records, each scope and period of Svc:Budgets checked on
// save and enforced, the Svc-Budget header, 429 BudgetExceeded through the Core API and every facade, and
// 100 concurrent completions against a budget with room for 10 on the embedded store, two service
// processes on it, and Cosmos DB.
import { randomUUID } from 'node:crypto';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { freePort } from '../../../scripts/azurite.js';
import { startMockLlm, type MockLlm } from '../../../scripts/mock-llm.js';
import { LOCAL_DEFAULT_USER, loadLocalKey, mintLocalToken, oidForUpn } from '../../../shared/auth/local-idp.js';
import { ROLE_IDS, roleDefinitionPath } from '../../../shared/providers/types/roles.js';
import { openCosmosStore } from '../../../shared/store/cosmos-store.js';
import { grantReader, seedAgent } from '../../support/agents.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { startScript } from '../../support/processes.js';
import { INSTANCE } from '../../support/services.js';

const BUDGETS = 'Svc:Budgets';
/** One currency unit per token in and out: a call's cost is its token count. */
const PRICING = { input_per_million: 1_000_000, output_per_million: 1_000_000, currency: 'EUR' };

const setBudgets = async (app: Pick<TestApp, 'call' | 'management'>, budgets: unknown[]) =>
  app.call('POST', `${app.management}/instances/${INSTANCE}/providers/Svc.Configuration/appConfigurations/${BUDGETS}`, {
    body: { name: BUDGETS, key: BUDGETS, value: JSON.stringify(budgets) },
  });
const budget = (name: string, limit: number, extra: Record<string, unknown> = {}) => ({
  name,
  scope: 'instance',
  limit,
  currency: 'EUR',
  period: 'day',
  ...extra,
});

describe('budgets', () => {
  let app: TestApp;
  let llm: MockLlm;
  const complete = (agent: string, prompt: string, as?: string, extra: Record<string, unknown> = {}) =>
    app.call('POST', `${app.core}/instances/${INSTANCE}/completions`, {
      body: {
        user_prompt: prompt,
        agent_name: agent,
        settings: { model_parameters: { max_new_tokens: 10 } },
        ...extra,
      },
      ...(as ? { as } : {}),
    });

  beforeAll(async () => {
    llm = await startMockLlm();
    app = await startTestApp({ MODEL_MAX_RETRIES: '0' });
    await seedAgent(app, 'priced', { llmUrl: llm.url, pricing: PRICING, costCenter: 'sales' });
    await seedAgent(app, 'other', { llmUrl: llm.url, pricing: PRICING });
    await seedAgent(app, 'dollar', { llmUrl: llm.url, pricing: { ...PRICING, currency: 'USD' } });
    await grantReader(app, 'second@example.com', 'priced');
    await grantReader(app, 'third@example.com', 'other');
  });
  afterAll(async () => {
    await app.close();
    await llm.close();
  });

  it("costs each call at the model's prices, with its currency and cost center on the usage record", async () => {
    const r = await complete('priced', 'three little words');
    expect(r.status).toBe(200);
    const body = r.body as { operation_id: string; total_tokens: number; total_cost: number };
    expect(body.total_cost).toBe(body.total_tokens);
    const record = await app.services.store.container('usage').read('owner@local.test', body.operation_id);
    expect(record).toMatchObject({ cost: body.total_tokens, currency: 'EUR', cost_center: 'sales', protocol: 'core' });
  });

  it('checks budgets on save, naming what is wrong', async () => {
    for (const [value, message] of [
      [[budget('a', 5, { scope: 'galaxy' })], /budget 0 scope/],
      [[budget('a', 5, { scope: 'agent' })], /agent_name/],
      [[budget('a', 5, { scope: 'cost_center' })], /cost_center/],
      [[budget('a', 5, { currency: 'euro' })], /currency/],
      [[budget('a', 0)], /limit/],
      [[budget('a', 5), budget('a', 6)], /twice/],
    ] as [unknown[], RegExp][]) {
      const r = await setBudgets(app, value);
      expect(r.status).toBe(400);
      expect(JSON.stringify(r.body)).toMatch(message);
    }
  });

  it('holds an instance budget: the header counts down, then 429 BudgetExceeded names it', async () => {
    // Each call reserves its prompt's tokens and 10 output tokens (25) and costs 8 (the mock's words): the
    // third call's reservation would take 16 spent past 35.
    expect((await setBudgets(app, [budget('daily', 35)])).status).toBe(200);
    try {
      const first = await complete('priced', 'one');
      expect(first.status).toBe(200);
      const header = first.headers.get('svc-budget') ?? '';
      expect(header).toMatch(/^"daily";remaining=\d+(\.\d+)?$/);
      const second = await complete('other', 'two');
      expect(second.status).toBe(200);
      expect(Number(second.headers.get('svc-budget')?.split('=')[1])).toBeLessThan(Number(header.split('=')[1]));
      const refused = await complete('priced', 'three');
      expect(refused.status).toBe(429);
      expect(refused.body).toMatchObject({
        error: { code: 'BudgetExceeded', message: expect.stringContaining('daily') as string },
      });
      expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
      // Streamed: refused before the stream starts.
      const streamed = await fetch(`${app.core}/instances/${INSTANCE}/completions`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${await app.token()}`,
          'content-type': 'application/json',
          accept: 'text/event-stream',
        },
        body: JSON.stringify({ user_prompt: 'four', agent_name: 'priced' }),
      });
      expect(streamed.status).toBe(429);
    } finally {
      await setBudgets(app, []);
    }
  });

  it('charges a stream its client cut: its prompt and what it was sent', async () => {
    expect((await setBudgets(app, [budget('cut', 10_000)])).status).toBe(200);
    llm.setStreaming(0, 3000);
    try {
      const words = Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ');
      const controller = new AbortController();
      const streamed = await fetch(`${app.core}/instances/${INSTANCE}/completions`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${await app.token()}`,
          'content-type': 'application/json',
          accept: 'text/event-stream',
        },
        body: JSON.stringify({ user_prompt: words, agent_name: 'other' }),
        signal: controller.signal,
      });
      expect(streamed.status).toBe(200);
      const reader = streamed.body!.getReader();
      let seen = '';
      while (!seen.includes('word1')) seen += new TextDecoder().decode((await reader.read()).value);
      controller.abort();
      const [definition] = await app.services.budgets.definitions();
      // The prompt alone is some 50 tokens at a unit each, and at least one word was streamed.
      await expect
        .poll(async () => (await app.services.budgets.standing(definition!)).subjects[0]?.spent ?? 0, {
          timeout: 10_000,
        })
        .toBeGreaterThan(50);
    } finally {
      llm.setStreaming(0, 0);
      await setBudgets(app, []);
    }
  });

  it(
    "counts a model's answer that reports no usage, and charges a call past its deadline all that was held for " + 'it',
    async () => {
      await seedAgent(app, 'silent', { llmUrl: llm.url, pricing: PRICING, timeoutSeconds: 1 });
      expect((await setBudgets(app, [budget('watched', 10_000)])).status).toBe(200);
      const [definition] = await app.services.budgets.definitions();
      const spent = async () => (await app.services.budgets.standing(definition!)).subjects[0]?.spent ?? 0;
      try {
        const words = Array.from({ length: 30 }, (_, i) => `word${i}`).join(' ');
        llm.next({
          raw: JSON.stringify({
            choices: [{ index: 0, message: { role: 'assistant', content: words }, finish_reason: 'stop' }],
          }),
        });
        const counted = await complete('silent', 'say thirty words');
        expect(counted.status).toBe(200);
        const body = counted.body as { operation_id: string; total_tokens: number; total_cost: number };
        // Thirty words are some thirty tokens, however the model keeps quiet about them.
        expect(body.total_tokens).toBeGreaterThan(30);
        expect(body.total_cost).toBe(body.total_tokens);
        await expect.poll(spent, { timeout: 10_000 }).toBe(body.total_cost);

        // Past its deadline the model may have done all it was asked: what was held (its prompt and 10 tokens out) is
        // spent.
        const before = await spent();
        llm.next({ hangMs: 3000 });
        const late = await complete('silent', 'take your time');
        expect(late.status).toBe(504);
        await expect.poll(async () => (await spent()) - before, { timeout: 10_000 }).toBeGreaterThan(10);
      } finally {
        await setBudgets(app, []);
      }
    },
  );

  it('scopes budgets to an agent, each user, a cost center and each access token', async () => {
    const token = (
      (
        await app.call(
          'POST',
          `${app.management}/instances/${INSTANCE}/providers/Svc.Agent/agents/other/agent-access-tokens`,
          { body: { type: 'agent-access-token', name: 'k' } },
        )
      ).body as { resource: string }
    ).resource;
    const withToken = (prompt: string) =>
      fetch(`${app.core}/instances/${INSTANCE}/completions`, {
        method: 'POST',
        headers: { 'x-agent-access-token': token, 'content-type': 'application/json' },
        body: JSON.stringify({
          user_prompt: prompt,
          agent_name: 'other',
          settings: { model_parameters: { max_new_tokens: 10 } },
        }),
      });
    const cases: {
      budgets: unknown[];
      spend: () => Promise<unknown>;
      refused: () => Promise<number>;
      free: () => Promise<number>;
    }[] = [
      // The agent's budget: the other agent is free.
      {
        budgets: [budget('agent', 25, { scope: 'agent', agent_name: 'priced' })],
        spend: () => complete('priced', 'a'),
        refused: async () => (await complete('priced', 'b')).status,
        free: async () => (await complete('other', 'c')).status,
      },
      // Each user: the owner's spend leaves the second user's budget whole.
      {
        budgets: [budget('user', 25, { scope: 'user' })],
        spend: () => complete('priced', 'a'),
        refused: async () => (await complete('priced', 'b')).status,
        free: async () => (await complete('priced', 'c', 'second@example.com')).status,
      },
      // A cost center: only agents with that cost_center.
      {
        budgets: [budget('sales', 25, { scope: 'cost_center', cost_center: 'sales' })],
        spend: () => complete('priced', 'a'),
        refused: async () => (await complete('priced', 'b')).status,
        free: async () => (await complete('other', 'c')).status,
      },
      // Each access token: a user of the same agent is free.
      {
        budgets: [budget('token', 25, { scope: 'access_token', agent_name: 'other' })],
        spend: () => withToken('a'),
        refused: async () => (await withToken('b')).status,
        free: async () => (await complete('other', 'c')).status,
      },
      // Each user counts an access token as a subject of its own: the token's spend leaves the users' budgets whole.
      {
        budgets: [budget('user', 25, { scope: 'user', agent_name: 'other' })],
        spend: () => withToken('a'),
        refused: async () => (await withToken('b')).status,
        free: async () => (await complete('other', 'c', 'third@example.com')).status,
      },
    ];
    for (const c of cases) {
      expect((await setBudgets(app, c.budgets)).status).toBe(200);
      await c.spend();
      expect(await c.refused()).toBe(429);
      expect(await c.free()).toBe(200);
    }
    // A budget kept in another currency cannot count a call's cost: the call is refused, naming both currencies.
    expect((await setBudgets(app, [budget('dollars', 25, { currency: 'USD' })])).status).toBe(200);
    expect((await complete('dollar', 'a')).status).toBe(200);
    const euros = await complete('priced', 'b');
    expect(euros.status).toBe(403);
    expect(euros.body).toMatchObject({
      error: { code: 'BudgetCurrencyMismatch', message: expect.stringMatching(/USD.*EUR/) as string },
    });
    await setBudgets(app, []);
  });

  it("reports each budget's standing and the cost behind it through analytics (104, 100, 101)", async () => {
    const analyst = 'budget-analyst@example.com';
    const assignment = randomUUID();
    await app.call(
      'POST',
      `${app.management}/instances/${INSTANCE}/providers/Svc.Authorization/roleAssignments/${assignment}`,
      {
        body: {
          name: assignment,
          principal_id: oidForUpn(analyst),
          principal_type: 'User',
          role_definition_id: roleDefinitionPath(ROLE_IDS.analyticsReader),
          scope: `/instances/${INSTANCE}`,
        },
      },
    );
    const report = async (request_type: number) => {
      const r = await app.call(
        'POST',
        `${app.management}/instances/${INSTANCE}/providers/Svc.Analytics/analytics/query?api-version=2024-02-16`,
        { body: { request_type }, as: analyst },
      );
      expect(r.status).toBe(200);
      return (r.body as { resource: { data: unknown } }).resource.data;
    };
    const status = `status-${randomUUID().slice(0, 8)}`;
    expect(
      (await setBudgets(app, [budget(status, 1000), budget(`${status}-people`, 1000, { scope: 'user' })])).status,
    ).toBe(200);
    try {
      const costs: Record<string, number> = {};
      for (const [as, prompt] of [
        [undefined, 'one'],
        [undefined, 'two'],
        ['second@example.com', 'three'],
      ] as const) {
        const r = await complete('priced', prompt, as);
        expect(r.status).toBe(200);
        const who = as ?? 'owner@local.test';
        costs[who] = (costs[who] ?? 0) + (r.body as { total_cost: number }).total_cost;
      }
      type Standing = {
        name: string;
        subjects: { subject: string | null; spent: number; reserved: number }[];
        daily: { cost: number }[];
      };
      const standing = async () => (await report(104)) as Standing[];
      // Spend reaches the counters within a second of each call.
      const deadline = Date.now() + 10_000;
      let found = await standing();
      while (
        found[0]?.subjects[0]?.spent !== costs['owner@local.test']! + costs['second@example.com']! &&
        Date.now() < deadline
      ) {
        await new Promise((r) => setTimeout(r, 200));
        found = await standing();
      }
      expect(found[0]?.subjects).toEqual([
        {
          subject: null,
          spent: costs['owner@local.test']! + costs['second@example.com']!,
          reserved: expect.any(Number) as number,
          remaining: expect.any(Number) as number,
        },
      ]);
      expect(found[1]?.subjects.map((x) => [x.subject, x.spent])).toEqual(
        [
          ['owner@local.test', costs['owner@local.test']],
          ['second@example.com', costs['second@example.com']],
        ].sort((a, b) => (b[1] as number) - (a[1] as number)),
      );
      // Today's spend in the instance budget (EUR) is what the cost reports count in EUR today.
      const today = found[0]?.daily.at(-1)?.cost;
      const byAgent = (await report(101)) as {
        totals: { currency: string | null }[];
        items: { currency: string | null; daily: { cost: number }[] }[];
      };
      expect(byAgent.totals.map((t) => t.currency)).toEqual(['EUR', 'USD']);
      expect(today).toBeCloseTo(
        byAgent.items.filter((i) => i.currency === 'EUR').reduce((n, i) => n + (i.daily.at(-1)?.cost ?? 0), 0),
        6,
      );
      const byCenter = (await report(100)) as { items: { name: string | null; total_cost: number }[] };
      expect(byCenter.items.find((i) => i.name === 'sales')?.total_cost).toBeGreaterThanOrEqual(
        costs['owner@local.test']! + costs['second@example.com']!,
      );
    } finally {
      await setBudgets(app, []);
    }
  });

  it('refuses through the OpenAI API, MCP and A2A too', async () => {
    // One call (reserving 25, costing 8) fits; the next one's reservation would not.
    expect((await setBudgets(app, [budget('tiny', 30)])).status).toBe(200);
    try {
      expect((await complete('priced', 'spend it')).status).toBe(200);
      const token = await app.token();
      const openai = await fetch(`${app.core}/instances/${INSTANCE}/openai/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'priced', messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect(openai.status).toBe(429);
      expect(await openai.json()).toMatchObject({
        error: {
          type: 'insufficient_quota',
          code: 'insufficient_quota',
          message: expect.stringContaining('tiny') as string,
        },
      });
      const a2a = await app.call('POST', `${app.core}/instances/${INSTANCE}/a2a/priced`, {
        body: {
          jsonrpc: '2.0',
          id: 1,
          method: 'message/send',
          params: { message: { role: 'user', messageId: 'm', parts: [{ kind: 'text', text: 'hi' }] } },
        },
      });
      expect(a2a.status).toBe(429);
      const mcp = new McpClient({ name: 'budget-test', version: '1.0.0' });
      await mcp.connect(
        new StreamableHTTPClientTransport(new URL(`${app.core}/instances/${INSTANCE}/mcp/agents`), {
          requestInit: { headers: { authorization: `Bearer ${token}` } },
        }),
      );
      const tool = await mcp.callTool({ name: 'priced', arguments: { prompt: 'hi' } });
      expect(tool.isError).toBe(true);
      expect(JSON.stringify(tool.content)).toMatch(/BudgetExceeded/);
      await mcp.close();
    } finally {
      await setBudgets(app, []);
    }
  });
});

/**
 * 100 completions at once against a budget with room for about 10: what is recorded stays within the limit plus one
 * call's largest cost.
 */
async function hundredAtOnce(
  cores: { core: string; token: () => Promise<string> }[],
  read: () => Promise<number>,
  limit: number,
) {
  const tokens = await Promise.all(cores.map((c) => c.token()));
  const statuses = await Promise.all(
    Array.from({ length: 100 }, (_, i) => {
      const c = cores[i % cores.length]!;
      return fetch(`${c.core}/instances/${INSTANCE}/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tokens[i % cores.length]}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          user_prompt: `call number ${i}`,
          agent_name: 'priced',
          settings: { model_parameters: { max_new_tokens: 10 } },
        }),
      }).then((r) => r.status);
    }),
  );
  const spent = await read();
  const completed = statuses.filter((st) => st === 200).length;
  process.stdout.write(
    `budget of ${limit}: ${completed} of 100 completed, ${statuses.filter((st) => st === 429).length} ` +
      `refused, ${spent} spent\n`,
  );
  expect(statuses.every((st) => st === 200 || st === 429)).toBe(true);
  expect(completed).toBeGreaterThan(0);
  // One call's largest cost: its prompt (about 10 tokens with the agent's) and its 10 output tokens.
  expect(spent).toBeLessThanOrEqual(limit + 30);
}

describe.each([
  {
    name: 'the embedded store, two service processes',
    start: async () => {
      const a = await startTestApp({ MODEL_MAX_RETRIES: '0' });
      const port = await freePort();
      const b = await startScript(
        'start',
        { ...a.env, CORE_PORT: String(port), MANAGEMENT_PORT: String(await freePort()), ALLOW_PRIVATE_NETWORK: 'true' },
        /Get a token/,
      );
      const auth = a.services.config.auth;
      if (auth.kind !== 'local') throw new Error('the local identity provider is needed');
      const key = await loadLocalKey(auth.keyFile);
      const bToken = () =>
        mintLocalToken(key, `http://127.0.0.1:${port}/local-idp`, auth.audience, {
          upn: LOCAL_DEFAULT_USER.upn,
          oid: LOCAL_DEFAULT_USER.oid,
        });
      return {
        app: a,
        cores: [
          { core: a.core, token: () => a.token() },
          { core: `http://127.0.0.1:${port}`, token: bToken },
        ],
        close: async () => (await b.stop(), await a.close()),
      };
    },
  },
  {
    name: 'Cosmos DB',
    start: async () => {
      const a = await startTestApp(
        { MODEL_MAX_RETRIES: '0' },
        {
          store: await openCosmosStore({
            endpoint: inject('cosmosEndpoint'),
            key: 'local-test-key',
            database: `db-${randomUUID()}`,
            createContainers: true,
          }),
        },
      );
      return { app: a, cores: [{ core: a.core, token: () => a.token() }], close: () => a.close() };
    },
  },
])('100 concurrent completions against one budget on $name', ({ start }) => {
  it('spend stays within the limit plus one call', async () => {
    const llm = await startMockLlm();
    const { app, cores, close } = await start();
    try {
      await seedAgent(app, 'priced', { llmUrl: llm.url, pricing: PRICING });
      const limit = 150;
      expect((await setBudgets(app, [budget('shared', limit)])).status).toBe(200);
      const usage = app.services.store.container('usage');
      await hundredAtOnce(
        cores,
        async () => (await usage.query({ partition: 'owner@local.test' })).items.reduce((sum, u) => sum + u.cost, 0),
        limit,
      );
    } finally {
      await close();
      await llm.close();
    }
  }, 120_000);
});
