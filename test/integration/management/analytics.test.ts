// Analytics over a seeded dataset whose answers were computed by hand (see the comments), one case per
// request type, with UTC day boundaries, an empty day, the agent filter and crafted abuse patterns.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REQUEST_TYPE_NUMBERS } from '../../../shared/analytics/request.js';
import { ANALYTICS_DATA } from '../../../shared/analytics/schemas.js';
import { oidForUpn } from '../../../shared/auth/local-idp.js';
import { ROLE_IDS, roleDefinitionPath } from '../../../shared/providers/types/roles.js';
import type { UsageDoc } from '../../../shared/completions/usage.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { INSTANCE } from '../../support/services.js';

const ANALYST = 'analyst@example.com';
const MARCH = { start_date: '2026-03-01T00:00:00Z', end_date: '2026-03-04T23:59:59Z' };
const APRIL = { start_date: '2026-04-01T00:00:00Z', end_date: '2026-04-03T23:59:59Z' };

// Sessions: s1 and s2 are alice's, s3 bob's, s4 carol's (created before the period).
const SESSIONS: [string, string, string][] = [
  ['s1', 'alice@x.com', '2026-03-01T09:00:00.000Z'],
  ['s2', 'alice@x.com', '2026-03-02T10:00:00.000Z'],
  ['s3', 'bob@x.com', '2026-03-01T23:00:00.000Z'],
  ['s4', 'carol@x.com', '2026-02-20T00:00:00.000Z'],
];
// Turns: [session, upn, agent, user message time, assistant message time]. Note the UTC day boundary
// between alice's second and third turns, and carol's turn before the period.
const TURNS: [string, string, string, string, string][] = [
  ['s1', 'alice@x.com', 'A', '2026-03-01T09:00:00.000Z', '2026-03-01T09:00:01.000Z'],
  ['s1', 'alice@x.com', 'A', '2026-03-01T23:59:58.000Z', '2026-03-01T23:59:59.000Z'],
  ['s2', 'alice@x.com', 'B', '2026-03-02T00:00:00.000Z', '2026-03-02T00:00:01.000Z'],
  ['s3', 'bob@x.com', 'A', '2026-03-02T12:00:00.000Z', '2026-03-02T12:00:05.000Z'],
  ['s3', 'bob@x.com', 'B', '2026-03-03T08:00:00.000Z', '2026-03-03T08:00:02.000Z'],
  ['s4', 'carol@x.com', 'A', '2026-02-25T10:00:00.000Z', '2026-02-25T10:00:01.000Z'],
];
// Usage: [upn, agent, deployment, tokens, session, time, duration ms, status]. dave's agent C appears only here.
const USAGE: [string, string, string, number, string | null, string, number, 'Completed' | 'Failed'][] = [
  ['alice@x.com', 'A', 'gpt-a', 100, 's1', '2026-03-01T09:00:01.000Z', 1000, 'Completed'],
  ['alice@x.com', 'A', 'gpt-a', 300, 's1', '2026-03-01T23:59:59.000Z', 3000, 'Completed'],
  ['alice@x.com', 'B', 'gpt-b', 200, 's2', '2026-03-02T00:00:01.000Z', 2000, 'Completed'],
  ['bob@x.com', 'A', 'gpt-a', 50, 's3', '2026-03-02T12:00:05.000Z', 500, 'Completed'],
  ['bob@x.com', 'B', '', 150, 's3', '2026-03-03T08:00:02.000Z', 1500, 'Completed'],
  ['bob@x.com', 'A', 'gpt-a', 0, null, '2026-03-03T09:00:00.000Z', 100, 'Failed'],
  ['carol@x.com', 'A', 'gpt-a', 999, 's4', '2026-02-25T10:00:01.000Z', 900, 'Completed'],
  ['dave@x.com', 'C', 'gpt-c', 70, null, '2026-03-03T10:00:00.000Z', 700, 'Completed'],
];
// Files: [upn, agent, size, type, session, time].
const FILES: [string, string, number, string, string | null, string][] = [
  ['alice@x.com', 'A', 1000, 'text/plain', 's1', '2026-03-01T09:05:00.000Z'],
  ['alice@x.com', 'A', 3000, 'application/pdf', 's1', '2026-03-01T09:06:00.000Z'],
  ['bob@x.com', 'A', 2000, 'text/plain', 's3', '2026-03-02T13:00:00.000Z'],
  ['bob@x.com', 'B', 500, 'image/png', null, '2026-03-03T13:00:00.000Z'],
];

const usageDoc = (
  upn: string,
  agent: string,
  deployment: string,
  tokens: number,
  session: string | null,
  at: string,
  duration: number,
  status: 'Completed' | 'Failed',
): UsageDoc => {
  const id = randomUUID();
  return {
    id,
    pk: upn,
    operation_id: id,
    session_id: session,
    upn,
    user_id: upn,
    agent_name: agent,
    model_deployment_name: deployment,
    prompt_tokens: tokens,
    completion_tokens: 0,
    total_tokens: tokens,
    cost: 0,
    timestamp: at,
    day: at.slice(0, 10),
    duration_ms: duration,
    status,
  };
};

// Charge-back in May: [upn, agent, deployment, prompt tokens, completion tokens, cost, currency, cost center, time].
// The aat_ user is an agent access token's identity.
const MAY = { start_date: '2026-05-01T00:00:00Z', end_date: '2026-05-03T23:59:59Z' };
const COSTS: [string, string, string, number, number, number, string | null, string | null, string][] = [
  ['alice@x.com', 'A', 'gpt-a', 100, 50, 0.25, 'USD', 'sales', '2026-05-01T10:00:00.000Z'],
  ['alice@x.com', 'A', 'gpt-a', 200, 100, 0.5, 'USD', 'sales', '2026-05-02T10:00:00.000Z'],
  ['bob@x.com', 'B', 'gpt-b', 10, 10, 0.1, 'EUR', 'support', '2026-05-02T11:00:00.000Z'],
  ['bob@x.com', 'A', 'gpt-a', 40, 20, 0.1, 'USD', 'sales', '2026-05-03T09:00:00.000Z'],
  ['aat_a_k1@tokens.local', 'A', 'gpt-a', 30, 20, 0.05, 'USD', 'sales', '2026-05-03T10:00:00.000Z'],
  ['dave@x.com', 'C', '', 30, 0, 0.03, null, null, '2026-05-01T12:00:00.000Z'],
];
const costDoc = ([
  upn,
  agent,
  deployment,
  prompt,
  completion,
  cost,
  currency,
  costCenter,
  at,
]: (typeof COSTS)[number]): UsageDoc => ({
  ...usageDoc(upn, agent, deployment, prompt + completion, null, at, 100, 'Completed'),
  prompt_tokens: prompt,
  completion_tokens: completion,
  cost,
  ...(currency ? { currency } : {}),
  ...(costCenter ? { cost_center: costCenter } : {}),
});

/** Abuse patterns in April: each user trips the indicators its name says. */
function abuseRecords(): UsageDoc[] {
  const at = (base: string, plusMs: number) => new Date(Date.parse(base) + plusMs).toISOString();
  const out: UsageDoc[] = [];
  // 25 operations in 50 s: RapidFireRequests (> 20 within 1 minute).
  for (let i = 0; i < 25; i++)
    out.push(usageDoc('rapid@x.com', 'A', 'gpt-a', 10, null, at('2026-04-01T10:00:00Z', i * 2000), 100, 'Completed'));
  // 150 operations, 24 s apart (just under an hour), 400 tokens each: HighRequestRate and HighTokenConsumption.
  for (let i = 0; i < 150; i++)
    out.push(
      usageDoc('volume@x.com', 'A', 'gpt-a', 400, null, at('2026-04-01T10:00:00Z', i * 24_000), 100, 'Completed'),
    );
  // 600 operations 6 s apart, 200 tokens each: ExtremeRequestRate and ExtremeTokenConsumption.
  for (let i = 0; i < 600; i++)
    out.push(
      usageDoc('extreme@x.com', 'A', 'gpt-a', 200, null, at('2026-04-02T10:00:00Z', i * 6000), 100, 'Completed'),
    );
  // 10 operations, 4 failed: HighErrorRate (40% > 30%).
  for (let i = 0; i < 10; i++)
    out.push(
      usageDoc(
        'errors@x.com',
        'A',
        'gpt-a',
        10,
        null,
        at('2026-04-01T12:00:00Z', i * 300_000),
        100,
        i < 4 ? 'Failed' : 'Completed',
      ),
    );
  // 12 agents within 22 minutes: AgentHopping (> 10 within 60 minutes).
  for (let i = 0; i < 12; i++)
    out.push(
      usageDoc(
        'hopper@x.com',
        `agent-${i}`,
        'gpt-a',
        10,
        null,
        at('2026-04-01T12:00:00Z', i * 120_000),
        100,
        'Completed',
      ),
    );
  // One operation every 20 minutes for 21 hours: ContinuousUsage (> 20 hours without a 30-minute gap).
  for (let i = 0; i <= 63; i++)
    out.push(
      usageDoc('marathon@x.com', 'A', 'gpt-a', 10, null, at('2026-04-01T00:00:00Z', i * 1_200_000), 100, 'Completed'),
    );
  return out;
}

describe('analytics', () => {
  let app: TestApp;
  const query = (body: Record<string, unknown>, as = ANALYST, version = '2024-02-16') =>
    app.call(
      'POST',
      `${app.management}/instances/${INSTANCE}/providers/Svc.Analytics/analytics/query` +
        (version ? `?api-version=${version}` : ''),
      { body, as },
    );
  const data = async (
    request_type: number,
    filters: Record<string, unknown> = MARCH,
    options?: Record<string, unknown>,
  ) => {
    const r = await query({ request_type, filters, ...(options ? { options } : {}) });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const body = r.body as {
      is_success: boolean;
      resource: { request_type: number; generated_at_utc: string; data: unknown };
    };
    expect(body.is_success).toBe(true);
    expect(body.resource.request_type).toBe(request_type);
    // The documented shape of the type (the OpenAPI document's), exactly.
    const shape = ANALYTICS_DATA[REQUEST_TYPE_NUMBERS.get(request_type)!].safeParse(body.resource.data);
    expect(shape.error?.issues ?? []).toEqual([]);
    return body.resource.data;
  };

  beforeAll(async () => {
    app = await startTestApp();
    const name = randomUUID();
    await app.call(
      'POST',
      `${app.management}/instances/${INSTANCE}/providers/Svc.Authorization/roleAssignments/${name}`,
      {
        body: {
          name,
          principal_id: oidForUpn(ANALYST),
          principal_type: 'User',
          role_definition_id: roleDefinitionPath(ROLE_IDS.analyticsReader),
          scope: `/instances/${INSTANCE}`,
        },
      },
    );
    const sessions = app.services.store.container('sessions');
    for (const [id, upn, at] of SESSIONS)
      await sessions.create({
        id,
        pk: upn,
        type: 'Session',
        name: id,
        upn,
        created_on: at,
        updated_on: at,
        day: at.slice(0, 10),
      });
    for (const [session, upn, agent, userAt, assistantAt] of TURNS) {
      for (const [sender, at] of [
        ['User', userAt],
        ['Assistant', assistantAt],
      ] as const) {
        await sessions.create({
          id: randomUUID(),
          pk: upn,
          type: 'Message',
          session_id: session,
          sender,
          sender_display_name: sender === 'User' ? upn : agent,
          text: 'secret words',
          tokens: 1,
          timestamp: at,
          day: at.slice(0, 10),
          hour: Number(at.slice(11, 13)),
          upn,
          operation_id: 'op',
          agent_name: agent,
        });
      }
    }
    const usage = app.services.store.container('usage');
    for (const u of USAGE) await usage.create(usageDoc(...u));
    for (const u of abuseRecords()) await usage.create(u);
    for (const c of COSTS) await usage.create(costDoc(c));
    const files = app.services.store.container('files');
    for (const [upn, agent, size, type, session, at] of FILES) {
      const id = randomUUID();
      await files.create({
        id,
        pk: upn,
        object_id: id,
        display_name: 'f',
        content_type: type,
        size,
        agent_name: agent,
        session_id: session,
        upn,
        created_on: at,
        day: at.slice(0, 10),
        blob_name: id,
      });
    }
  });
  afterAll(() => app.close());

  describe('access', () => {
    it('needs Analytics Reader: Owner alone is 403', async () => {
      expect((await query({ request_type: 0 }, 'owner@local.test')).status).toBe(403);
      expect((await query({ request_type: 0 }, 'nobody@example.com')).status).toBe(403);
    });

    it('answers 400 for a missing or wrong api-version, a bad body, and a missing required filter', async () => {
      expect((await query({ request_type: 0 }, ANALYST, '')).status).toBe(400);
      expect((await query({ request_type: 0 }, ANALYST, '2023-01-01')).status).toBe(400);
      expect((await query({ request_type: 18 })).status).toBe(400);
      expect((await query({ request_type: 99 })).status).toBe(400);
      expect((await query({ request_type: 105 })).status).toBe(400);
      expect((await query({})).status).toBe(400);
      for (const type of [2, 3, 4])
        expect((await query({ request_type: type })).body).toMatchObject({
          error: { code: 'BadRequest', message: expect.stringContaining('agent_name') as string },
        });
      for (const type of [8, 9, 13, 14])
        expect((await query({ request_type: type })).body).toMatchObject({
          error: { message: expect.stringContaining('username') as string },
        });
    });

    it('never returns message content', async () => {
      for (const [type, name] of REQUEST_TYPE_NUMBERS) {
        const r = await query({
          request_type: type,
          filters: { ...MARCH, agent_name: 'A', username: 'bob@x.com' },
          options: { include_abuse_detection: true },
        });
        expect(r.status).toBe(200);
        expect(JSON.stringify(r.body)).not.toContain('secret words');
        const shape = ANALYTICS_DATA[name].safeParse((r.body as { resource: { data: unknown } }).resource.data);
        expect(shape.error?.issues ?? [], name).toEqual([]);
      }
    });
  });

  it('0 Overview: conversations, tokens, users, agents, models, time of completions; also for one agent', async () => {
    // Sessions of March's completions: s1, s2, s3. Tokens: 100+300+200+50+150+0+70. Users: alice, bob, dave.
    // Agents: A, B, C. Models: gpt-a, gpt-b, none, gpt-c. Durations: 8,800 ms over 7 completions.
    expect(await data(0)).toEqual({
      total_conversations: 3,
      total_tokens: 870,
      active_users: 3,
      total_agents: 3,
      avg_response_time_ms: 1257.143,
      total_tools: 0,
      total_models: 4,
    });
    // Agent A: completions in s1 and s3 (and one without a session), by alice and bob; tokens 100+300+50+0.
    expect(await data(0, { ...MARCH, agent_name: 'A' })).toMatchObject({
      total_conversations: 2,
      total_tokens: 450,
      active_users: 2,
      total_agents: 1,
    });
    expect(await data(0, { ...MARCH, agent_name: 'nobody' })).toMatchObject({
      total_conversations: 0,
      total_tokens: 0,
      total_agents: 0,
    });
  });

  it('1 AllAgents and 2 AgentSummary: one summary per agent, by name, including token-only agents', async () => {
    const all = (await data(1)) as Record<string, unknown>[];
    expect(all.map((a) => a.agent_name)).toEqual(['A', 'B', 'C']);
    // A: durations 1000+3000+500+100 over 4 operations, 1 failed; 3 files and 3 user messages over 2 conversations.
    expect(all[0]).toEqual({
      agent_name: 'A',
      unique_users: 2,
      total_conversations: 2,
      total_tokens: 450,
      avg_tokens_per_session: 225,
      avg_tools_used: 0,
      avg_response_time_ms: 1150,
      p95_response_time_ms: null,
      error_rate: 0.25,
      most_used_tools: [],
      avg_files_per_conversation: 1.5,
      avg_rounds_per_conversation: 1.5,
    });
    expect(all[1]).toMatchObject({
      agent_name: 'B',
      unique_users: 2,
      total_conversations: 2,
      total_tokens: 350,
      avg_tokens_per_session: 175,
      avg_response_time_ms: 1750,
      error_rate: 0,
      avg_files_per_conversation: 0.5,
      avg_rounds_per_conversation: 1,
    });
    // C ran only without a session: one user, no conversation.
    expect(all[2]).toMatchObject({
      agent_name: 'C',
      unique_users: 1,
      total_conversations: 0,
      total_tokens: 70,
      avg_tokens_per_session: 0,
      avg_response_time_ms: 700,
    });
    expect(await data(2, { ...MARCH, agent_name: 'A' })).toEqual(all[0]);
    expect(await data(2, { ...MARCH, agent_name: 'Z' })).toMatchObject({ agent_name: 'Z', total_tokens: 0 });
  });

  it('3 AgentToolCombinations and 5 Tools: no tool executions are recorded', async () => {
    expect(await data(3, { ...MARCH, agent_name: 'A' })).toEqual({});
    expect(await data(5)).toEqual([]);
  });

  it("4 AgentFiles: counts, sizes, median and types of the agent's files", async () => {
    expect(await data(4, { ...MARCH, agent_name: 'A' })).toEqual({
      total_files: 3,
      total_storage_bytes: 6000,
      avg_file_size_bytes: 2000,
      median_file_size_bytes: 2000,
      avg_files_per_conversation: 1.5,
      file_type_distribution: { 'text/plain': 2, 'application/pdf': 1 },
    });
  });

  it('6 Models: per deployment, Unknown when none, by tokens', async () => {
    const models = (await data(6)) as Record<string, unknown>[];
    expect(models.map((m) => [m.model_name, m.total_tokens, m.agent_count, m.usage_count])).toEqual([
      ['gpt-a', 450, 1, 1],
      ['gpt-b', 200, 1, 1],
      ['Unknown', 150, 1, 1],
      ['gpt-c', 70, 1, 1],
    ]);
    expect(models[0]).toMatchObject({
      deployment_name: 'gpt-a',
      avg_response_time_ms: 1150,
      avg_tokens_per_completion: 112.5,
      error_rate: 0.25,
    });
  });

  it('7 TopUsers: by requests (default), tokens or sessions, with abuse detection on request', async () => {
    // Requests are completions (bob's failed one too); the last activity is the latest completion.
    const top = (await data(7)) as Record<string, unknown>[];
    expect(top.map((u) => [u.username, u.total_requests, u.total_tokens, u.active_sessions, u.last_activity])).toEqual([
      ['alice@x.com', 3, 600, 2, '2026-03-02T00:00:01.000Z'],
      ['bob@x.com', 3, 200, 1, '2026-03-03T09:00:00.000Z'],
      ['dave@x.com', 1, 70, 0, '2026-03-03T10:00:00.000Z'],
    ]);
    expect(top[1]).toMatchObject({ upn: 'bob@x.com', error_rate: 0.333, agents_used: 2, avg_response_time_ms: 700 });
    expect(top[0]).not.toHaveProperty('abuse_risk_score');
    expect(
      ((await data(7, { ...MARCH, sort_by: 'Tokens', top_count: 2 })) as { username: string }[]).map((u) => u.username),
    ).toEqual(['alice@x.com', 'bob@x.com']);
    const withAbuse = (await data(
      7,
      { ...APRIL, sort_by: 'RiskScore', top_count: 3 },
      { include_abuse_detection: true },
    )) as { username: string; abuse_risk_score: number; abuse_indicators: { volume_indicators: unknown[] } }[];
    expect(withAbuse[0]).toMatchObject({ username: 'extreme@x.com', abuse_risk_score: 9 });
    expect(withAbuse[0]?.abuse_indicators.volume_indicators).toHaveLength(2);
    expect(withAbuse.map((u) => u.username)).toEqual(['extreme@x.com', 'volume@x.com', 'rapid@x.com']);
  });

  it('8 UserSummary and 9 UserActivityTimeline', async () => {
    // bob: 3 completions (1 failed) on 2 days, 4 messages in 1 session; durations 500+1500+100.
    expect(await data(8, { ...MARCH, username: 'bob@x.com' })).toEqual({
      username: 'bob@x.com',
      total_requests: 3,
      total_tokens: 200,
      total_sessions: 1,
      active_days: 2,
      avg_session_length: 4,
      avg_response_time_ms: 700,
      error_rate: 0.333,
      agents_used: 2,
      peak_usage_hour: 12,
      peak_usage_day: 'Monday',
    });
    const timeline = (await data(9, { ...MARCH, username: 'bob@x.com' })) as {
      username: string;
      entries: Record<string, unknown>[];
    };
    expect(timeline.entries.map((e) => [e.timestamp, e.session_id, e.tokens, e.agent_name])).toEqual([
      ['2026-03-02T12:00:05.000Z', 's3', 50, 'A'],
      ['2026-03-03T08:00:02.000Z', 's3', 150, 'B'],
      ['2026-03-03T09:00:00.000Z', null, 0, 'A'],
    ]);
    expect(timeline.entries[0]?.operation_id).toEqual(expect.any(String));
  });

  it('10, 11, 16: daily series over every UTC day, zero-filled, and for one agent', async () => {
    expect(await data(10)).toEqual([
      { date: '2026-03-01', agent_counts: { A: 2, B: 0 } },
      { date: '2026-03-02', agent_counts: { A: 1, B: 1 } },
      { date: '2026-03-03', agent_counts: { A: 0, B: 1 } },
      { date: '2026-03-04', agent_counts: { A: 0, B: 0 } },
    ]);
    expect(await data(10, { ...MARCH, agent_name: 'A' })).toEqual([
      { date: '2026-03-01', agent_counts: { A: 2 } },
      { date: '2026-03-02', agent_counts: { A: 1 } },
      { date: '2026-03-03', agent_counts: { A: 0 } },
      { date: '2026-03-04', agent_counts: { A: 0 } },
    ]);
    // Users of each agent: who made a completion that day (bob's failed one to A on the 3rd too; dave's to C).
    expect(await data(11)).toEqual([
      { date: '2026-03-01', agent_counts: { A: 1, B: 0, C: 0 } },
      { date: '2026-03-02', agent_counts: { A: 1, B: 1, C: 0 } },
      { date: '2026-03-03', agent_counts: { A: 1, B: 1, C: 1 } },
      { date: '2026-03-04', agent_counts: { A: 0, B: 0, C: 0 } },
    ]);
    expect(await data(16)).toEqual([
      { date: '2026-03-01', count: 1 },
      { date: '2026-03-02', count: 2 },
      { date: '2026-03-03', count: 2 },
      { date: '2026-03-04', count: 0 },
    ]);
  });

  it('12 AllUsers: sorted by username, token records standing in for users without messages', async () => {
    expect(await data(12)).toEqual([
      { username: 'alice@x.com', total_conversations: 2, total_messages: 6, operation_count: 3, total_tokens: 600 },
      { username: 'bob@x.com', total_conversations: 1, total_messages: 4, operation_count: 3, total_tokens: 200 },
      { username: 'dave@x.com', total_conversations: 0, total_messages: 0, operation_count: 1, total_tokens: 70 },
    ]);
  });

  it('17 TokenUsageDashboard: from token records, each list by tokens', async () => {
    expect(await data(17)).toEqual({
      total_tokens: 870,
      total_users: 3,
      total_agents: 3,
      total_models: 4,
      agents: [
        { agent_name: 'A', total_tokens: 450, unique_users: 2, total_conversations: 2 },
        { agent_name: 'B', total_tokens: 350, unique_users: 2, total_conversations: 2 },
        { agent_name: 'C', total_tokens: 70, unique_users: 1, total_conversations: 0 },
      ],
      users: [
        { username: 'alice@x.com', total_tokens: 600, total_conversations: 2, operation_count: 3 },
        { username: 'bob@x.com', total_tokens: 200, total_conversations: 1, operation_count: 3 },
        { username: 'dave@x.com', total_tokens: 70, total_conversations: 0, operation_count: 1 },
      ],
      models: [
        { model_deployment_name: 'gpt-a', total_tokens: 450, agent_count: 1 },
        { model_deployment_name: 'gpt-b', total_tokens: 200, agent_count: 1 },
        { model_deployment_name: 'Unknown', total_tokens: 150, agent_count: 1 },
        { model_deployment_name: 'gpt-c', total_tokens: 70, agent_count: 1 },
      ],
    });
  });

  describe('charge-back (100 to 104)', () => {
    type CostReport = {
      group_by: string;
      totals: Record<string, unknown>[];
      items: {
        name: string | null;
        currency: string | null;
        total_cost: number;
        total_tokens: number;
        requests: number;
        daily: { date: string; cost: number }[];
      }[];
    };
    const cost = async (type: number, filters: Record<string, unknown> = MAY) =>
      (await data(type, filters)) as CostReport;

    it(
      '100 CostByCostCenter: per cost center and currency, most costly first, with daily series and totals per ' +
        'currency',
      async () => {
        const r = await cost(100);
        expect(r.group_by).toBe('cost_center');
        // sales: 0.25 + 0.5 + 0.1 + 0.05 in USD; support: bob's EUR call; none: dave's call of a model without a
        // currency.
        expect(r.items.map((i) => [i.name, i.currency, i.total_cost, i.total_tokens, i.requests])).toEqual([
          ['sales', 'USD', 0.9, 560, 4],
          ['support', 'EUR', 0.1, 20, 1],
          [null, null, 0.03, 30, 1],
        ]);
        expect(r.items[0]?.daily).toEqual([
          { date: '2026-05-01', cost: 0.25, total_tokens: 150, requests: 1 },
          { date: '2026-05-02', cost: 0.5, total_tokens: 300, requests: 1 },
          { date: '2026-05-03', cost: 0.15, total_tokens: 110, requests: 2 },
        ]);
        expect(r.totals).toEqual([
          { currency: 'EUR', total_cost: 0.1, prompt_tokens: 10, completion_tokens: 10, total_tokens: 20, requests: 1 },
          {
            currency: 'USD',
            total_cost: 0.9,
            prompt_tokens: 370,
            completion_tokens: 190,
            total_tokens: 560,
            requests: 4,
          },
          { currency: null, total_cost: 0.03, prompt_tokens: 30, completion_tokens: 0, total_tokens: 30, requests: 1 },
        ]);
      },
    );

    it('101 CostByAgent, 102 CostByUser and 103 CostByModel group the same records', async () => {
      expect((await cost(101)).items.map((i) => [i.name, i.currency, i.total_cost])).toEqual([
        ['A', 'USD', 0.9],
        ['B', 'EUR', 0.1],
        ['C', null, 0.03],
      ]);
      expect((await cost(102)).items.map((i) => [i.name, i.total_cost])).toEqual([
        ['alice@x.com', 0.75],
        ['bob@x.com', 0.1],
        ['bob@x.com', 0.1],
        ['aat_a_k1@tokens.local', 0.05],
        ['dave@x.com', 0.03],
      ]);
      // top_count keeps the first users; the totals still cover everyone.
      const top = await cost(102, { ...MAY, top_count: 1 });
      expect(top.items.map((i) => i.name)).toEqual(['alice@x.com']);
      expect(top.totals).toEqual((await cost(101)).totals);
      expect((await cost(103)).items.map((i) => [i.name, i.total_cost])).toEqual([
        ['gpt-a', 0.9],
        ['gpt-b', 0.1],
        ['Unknown', 0.03],
      ]);
      // Narrowed to one agent or one user.
      expect((await cost(100, { ...MAY, agent_name: 'B' })).items.map((i) => i.name)).toEqual(['support']);
      expect((await cost(101, { ...MAY, username: 'bob@x.com' })).items.map((i) => [i.name, i.total_cost])).toEqual([
        ['A', 0.1],
        ['B', 0.1],
      ]);
    });

    it('104 BudgetStatus: each budget with its current standing and its daily spend in scope', async () => {
      const key = 'Svc:Budgets';
      const budgets = [
        { name: 'all-usd', scope: 'instance', limit: 100, currency: 'USD', period: 'month' },
        { name: 'people', scope: 'user', limit: 5, currency: 'USD', period: 'day' },
        { name: 'keys', scope: 'access_token', limit: 5, currency: 'USD', period: 'week' },
        {
          name: 'support-eur',
          scope: 'cost_center',
          cost_center: 'support',
          limit: 10,
          currency: 'EUR',
          period: 'day',
        },
      ];
      await app.call(
        'POST',
        `${app.management}/instances/${INSTANCE}/providers/Svc.Configuration/appConfigurations/${key}`,
        { body: { name: key, key, value: JSON.stringify(budgets) } },
      );
      try {
        const status = (await data(104, MAY)) as {
          name: string;
          subjects: unknown[];
          daily: { date: string; cost: number }[];
          period_start: string;
        }[];
        expect(status.map((b) => b.name)).toEqual(['all-usd', 'people', 'keys', 'support-eur']);
        const daily = (name: string) => status.find((b) => b.name === name)?.daily.map((d) => d.cost);
        // USD and unpriced-currency costs count in a USD budget: dave's 0.03 on the 1st.
        expect(daily('all-usd')).toEqual([0.28, 0.5, 0.15]);
        // Users' calls only (not the token's); the token's only.
        expect(daily('people')).toEqual([0.28, 0.5, 0.1]);
        expect(daily('keys')).toEqual([0, 0, 0.05]);
        expect(daily('support-eur')).toEqual([0, 0.1, 0]);
        // Nothing was spent through admission in the current period: the whole scope stands at its limit, no user or
        // token has spent.
        expect(status[0]?.subjects).toEqual([{ subject: null, spent: 0, reserved: 0, remaining: 100 }]);
        expect(status[1]?.subjects).toEqual([]);
        expect(status[0]?.period_start).toBe(`${new Date().toISOString().slice(0, 7)}-01T00:00:00.000Z`);
        // Only the budgets that apply to an agent.
        expect(((await data(104, { ...MAY, agent_name: 'A' })) as { name: string }[]).map((b) => b.name)).toEqual([
          'all-usd',
          'people',
          'keys',
          'support-eur',
        ]);
      } finally {
        await app.call(
          'DELETE',
          `${app.management}/instances/${INSTANCE}/providers/Svc.Configuration/appConfigurations/${key}`,
        );
      }
    });
  });

  it('the reports agree: one data set, every report, the figures they share equal', async () => {
    for (const period of [MARCH, MAY]) {
      const overview = (await data(0, period)) as Record<string, number>;
      const agents = (await data(1, period)) as {
        agent_name: string;
        unique_users: number;
        total_conversations: number;
        total_tokens: number;
      }[];
      const models = (await data(6, period)) as { total_tokens: number }[];
      const users = (await data(12, period)) as {
        username: string;
        total_conversations: number;
        operation_count: number;
        total_tokens: number;
      }[];
      const top = (await data(7, { ...period, top_count: 1000 })) as {
        username: string;
        total_requests: number;
        total_tokens: number;
        active_sessions: number;
      }[];
      const dashboard = (await data(17, period)) as {
        total_tokens: number;
        total_users: number;
        total_agents: number;
        total_models: number;
        agents: typeof agents;
        users: { username: string; total_tokens: number; total_conversations: number; operation_count: number }[];
      };
      const active = (await data(16, period)) as { count: number }[];
      const perAgentUsers = (await data(11, period)) as { agent_counts: Record<string, number> }[];
      const costs = await Promise.all(
        [100, 101, 102, 103].map(
          (t) =>
            data(t, { ...period, top_count: 1000 }) as Promise<{ items: { total_tokens: number; requests: number }[] }>,
        ),
      );
      const sum = (list: { total_tokens: number }[]) => list.reduce((n, x) => n + x.total_tokens, 0);

      // Totals: the overview, the dashboard, and the sums of every per-agent, per-model, per-user and cost report.
      for (const total of [
        dashboard.total_tokens,
        sum(agents),
        sum(models),
        sum(users),
        sum(top),
        ...costs.map((c) => sum(c.items)),
      ])
        expect(total).toBe(overview.total_tokens);
      expect([dashboard.total_agents, agents.length, costs[1]!.items.length]).toEqual([
        overview.total_agents,
        overview.total_agents,
        overview.total_agents,
      ]);
      expect([dashboard.total_models, models.length]).toEqual([overview.total_models, overview.total_models]);
      expect([dashboard.total_users, users.length, top.length]).toEqual([
        overview.active_users,
        overview.active_users,
        overview.active_users,
      ]);
      expect(Math.max(...active.map((d) => d.count))).toBeLessThanOrEqual(overview.active_users!);
      // Each agent: its summary, its row of the dashboard, its overview and its daily users agree.
      for (const a of agents) {
        const row = dashboard.agents.find((d) => d.agent_name === a.agent_name);
        expect(row, a.agent_name).toEqual({
          agent_name: a.agent_name,
          total_tokens: a.total_tokens,
          unique_users: a.unique_users,
          total_conversations: a.total_conversations,
        });
        expect(await data(2, { ...period, agent_name: a.agent_name })).toEqual(a);
        expect(await data(0, { ...period, agent_name: a.agent_name })).toMatchObject({
          total_tokens: a.total_tokens,
          active_users: a.unique_users,
          total_conversations: a.total_conversations,
          total_agents: 1,
        });
        expect(Math.max(...perAgentUsers.map((d) => d.agent_counts[a.agent_name] ?? 0))).toBeLessThanOrEqual(
          a.unique_users,
        );
      }
      // Each user: all users, top users, the dashboard and the user's summary agree.
      for (const u of users) {
        const t = top.find((x) => x.username === u.username);
        const d = dashboard.users.find((x) => x.username === u.username);
        expect([t?.total_requests, t?.total_tokens, t?.active_sessions], u.username).toEqual([
          u.operation_count,
          u.total_tokens,
          u.total_conversations,
        ]);
        expect(d, u.username).toEqual({
          username: u.username,
          total_tokens: u.total_tokens,
          total_conversations: u.total_conversations,
          operation_count: u.operation_count,
        });
        expect(await data(8, { ...period, username: u.username })).toMatchObject({
          total_requests: u.operation_count,
          total_tokens: u.total_tokens,
          total_sessions: u.total_conversations,
        });
      }
    }
  });

  describe('abuse detection (13, 14, 15)', () => {
    const indicatorTypes = async (username: string) => {
      const r = (await data(14, { ...APRIL, username })) as Record<string, { type: string; severity: string }[]>;
      return [
        ...r.volume_indicators!,
        ...r.temporal_indicators!,
        ...r.behavioral_indicators!,
        ...r.resource_indicators!,
      ]
        .map((i) => `${i.type}:${i.severity}`)
        .sort();
    };

    it('trips each indicator with the user crafted for it', async () => {
      expect(await indicatorTypes('rapid@x.com')).toEqual(['RapidFireRequests:High']);
      expect(await indicatorTypes('volume@x.com')).toEqual(['HighRequestRate:Medium', 'HighTokenConsumption:Medium']);
      expect(await indicatorTypes('extreme@x.com')).toEqual([
        'ExtremeRequestRate:High',
        'ExtremeTokenConsumption:High',
      ]);
      expect(await indicatorTypes('errors@x.com')).toEqual(['HighErrorRate:Medium']);
      expect(await indicatorTypes('hopper@x.com')).toEqual(['AgentHopping:Medium']);
      expect(await indicatorTypes('marathon@x.com')).toEqual(['ContinuousUsage:Medium']);
      expect(await indicatorTypes('alice@x.com')).toEqual([]);
    });

    it('scores risk as the weighted sum of the factor scores', async () => {
      // extreme: volume 20 x 0.25 + token consumption 20 x 0.20 = 9.
      expect(await data(13, { ...APRIL, username: 'extreme@x.com' })).toEqual({
        username: 'extreme@x.com',
        risk_score: 9,
        factor_scores: {
          volume: 20,
          token_consumption: 20,
          error_rate: 0,
          temporal: 0,
          behavioral: 0,
          resource_exhaustion: 0,
        },
      });
      expect(await data(13, { ...APRIL, username: 'volume@x.com' })).toMatchObject({ risk_score: 4.5 });
      expect(await data(13, { ...APRIL, username: 'rapid@x.com' })).toMatchObject({ risk_score: 3 });
      expect(await data(13, { ...APRIL, username: 'errors@x.com' })).toMatchObject({ risk_score: 1.5 });
      expect((await data(14, { ...APRIL, username: 'extreme@x.com' })) as { risk_score: number }).toMatchObject({
        risk_score: 9,
      });
    });

    it('reports a VolumeAnomaly for High volume indicators only', async () => {
      const found = (await data(15, APRIL)) as { username: string; anomaly_type: string; severity: string }[];
      expect(found.map((a) => [a.username, a.anomaly_type])).toEqual([['extreme@x.com', 'VolumeAnomaly']]);
    });

    it('reads thresholds from configuration', async () => {
      const key = 'Svc:Analytics:AbuseDetection:HighErrorRateThreshold';
      await app.call(
        'POST',
        `${app.management}/instances/${INSTANCE}/providers/Svc.Configuration/appConfigurations/${key}`,
        { body: { name: key, key, value: '50' } },
      );
      expect(await indicatorTypes('errors@x.com')).toEqual([]);
      await app.call(
        'DELETE',
        `${app.management}/instances/${INSTANCE}/providers/Svc.Configuration/appConfigurations/${key}`,
      );
      expect(await indicatorTypes('errors@x.com')).toEqual(['HighErrorRate:Medium']);
    });

    it('refuses a threshold that is not a positive number, or a key the detection does not read', async () => {
      const save = (key: string, value: string) =>
        app.call(
          'POST',
          `${app.management}/instances/${INSTANCE}/providers/Svc.Configuration/appConfigurations/${key}`,
          { body: { name: key, key, value } },
        );
      for (const value of ['', '0', '-5', 'ten', 'Infinity']) {
        const r = await save('Svc:Analytics:AbuseDetection:RapidFireThreshold', value);
        expect(r.status, value).toBe(400);
        expect(JSON.stringify(r.body), value).toContain('must be a positive number');
      }
      const typo = await save('svc:analytics:abusedetection:RapidFireTreshold', '5');
      expect(typo.status).toBe(400);
      expect(JSON.stringify(typo.body)).toContain('is not an abuse detection setting');
      expect(await indicatorTypes('errors@x.com')).toEqual(['HighErrorRate:Medium']);
    });
  });

  it('defaults to the last 30 days', async () => {
    const recent = app.services.store.container('usage');
    const now = new Date();
    await recent.create(
      usageDoc(
        'recent@x.com',
        'R',
        'gpt-r',
        5,
        null,
        new Date(now.getTime() - 5 * 86_400_000).toISOString(),
        10,
        'Completed',
      ),
    );
    await recent.create(
      usageDoc(
        'recent@x.com',
        'R',
        'gpt-r',
        7,
        null,
        new Date(now.getTime() - 40 * 86_400_000).toISOString(),
        10,
        'Completed',
      ),
    );
    const r = await query({ request_type: 17 });
    expect((r.body as { resource: { data: { total_tokens: number } } }).resource.data.total_tokens).toBe(5);
    const daily = await query({ request_type: 16 });
    expect((daily.body as { resource: { data: unknown[] } }).resource.data.length).toBe(31);
  });
});
