// Completions, sessions and messages over HTTP against an OpenAI-compatible server on loopback.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockLlm, type MockLlm } from '../../../scripts/mock-llm.js';
import { grantReader as grantAgentReader, seedAgent } from '../../support/agents.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { INSTANCE } from '../../support/services.js';

describe('completions', () => {
  let app: TestApp;
  let llm: MockLlm;
  const core = (path: string) => `${app.core}/instances/${INSTANCE}${path}`;
  const complete = (body: Record<string, unknown>, as?: string) =>
    app.call('POST', core('/completions'), { body, ...(as ? { as } : {}) });
  const newSession = async (as?: string) =>
    (
      (await app.call('POST', core('/sessions'), { body: { name: 'Chat' }, ...(as ? { as } : {}) })).body as {
        id: string;
      }
    ).id;
  const grantReader = (upn: string, agent: string) => grantAgentReader(app, upn, agent);

  beforeAll(async () => {
    llm = await startMockLlm();
    app = await startTestApp({ MODEL_MAX_RETRIES: '2' });
    await seedAgent(app, 'helper', {
      llmUrl: llm.url,
      history: { enabled: true, max_history: 1 },
      prefix: 'Be helpful.',
      suffix: 'Answer briefly.',
      prices: { prompt: 1, completion: 2 },
    });
    await seedAgent(app, 'plain', { llmUrl: llm.url, modelParameters: { temperature: 0.2, max_new_tokens: 50 } });
  });
  afterAll(async () => {
    await app.close();
    await llm.close();
  });

  it('runs the typical flow: session, completion, messages; the next turns carry trimmed history', async () => {
    const sessionId = await newSession();
    const first = await complete({ user_prompt: 'What is two plus two?', session_id: sessionId, agent_name: 'helper' });
    expect(first.status).toBe(200);
    const body = first.body as Record<string, unknown>;
    expect(body).toMatchObject({
      user_prompt: 'What is two plus two?',
      completion: 'Echo: What is two plus two?\n\nAnswer briefly.',
      content: [{ type: 'text', value: 'Echo: What is two plus two?\n\nAnswer briefly.' }],
      citations: [],
      analysis_results: [],
      user_prompt_embedding: [],
    });
    expect(body.operation_id).toEqual(expect.any(String));
    const [prompt, completion] = [body.prompt_tokens as number, body.completion_tokens as number];
    expect(prompt).toBeGreaterThan(0);
    expect(body.total_tokens).toBe(prompt + completion);
    expect(body.total_cost).toBeCloseTo((prompt * 1 + completion * 2) / 1000, 6);
    expect(llm.requests.at(-1)?.body.messages).toEqual([
      { role: 'system', content: 'Be helpful.' },
      { role: 'user', content: 'What is two plus two?\n\nAnswer briefly.' },
    ]);

    const messages = await app.call('GET', core(`/sessions/${sessionId}/messages`));
    expect(messages.status).toBe(200);
    const list = messages.body as Record<string, unknown>[];
    expect(list.map((m) => [m.sender, m.text, m.tokens])).toEqual([
      ['User', 'What is two plus two?', prompt],
      ['Assistant', 'Echo: What is two plus two?\n\nAnswer briefly.', completion],
    ]);
    expect(list[0]).toMatchObject({ type: 'Message', session_id: sessionId, sender_display_name: 'owner' });
    expect(list[1]).toMatchObject({ sender_display_name: 'helper', operation_id: body.operation_id });

    await complete({ user_prompt: 'And three?', session_id: sessionId, agent_name: 'helper' });
    expect(llm.requests.at(-1)?.body.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user']);
    expect(llm.requests.at(-1)?.body.messages[1]?.content).toBe('What is two plus two?');
    // max_history 1: the third turn sees only the second.
    await complete({ user_prompt: 'And four?', session_id: sessionId, agent_name: 'helper' });
    expect(llm.requests.at(-1)?.body.messages.map((m) => m.content)).toEqual([
      'Be helpful.',
      'And three?',
      'Echo: And three?\n\nAnswer briefly.',
      'And four?\n\nAnswer briefly.',
    ]);

    const sessions = (await app.call('GET', core('/sessions'))).body as {
      id: string;
      updated_on: string;
      created_on: string;
    }[];
    const session = sessions.find((s) => s.id === sessionId);
    expect(session!.updated_on > session!.created_on).toBe(true);
  });

  it('sends no history when the agent has it off, and model parameters overridden by settings', async () => {
    const sessionId = await newSession();
    await complete({ user_prompt: 'one', session_id: sessionId, agent_name: 'plain' });
    await complete({
      user_prompt: 'two',
      session_id: sessionId,
      agent_name: 'plain',
      settings: { model_parameters: { temperature: 0.9 } },
    });
    const last = llm.requests.at(-1)!.body;
    expect(last.messages.map((m) => m.content)).toEqual(['You are a test agent.', 'two']);
    expect(last).toMatchObject({ model: 'plain-deployment', temperature: 0.9, max_tokens: 50 });
    const r = await complete({ user_prompt: 'three', agent_name: 'plain' });
    expect((r.body as { total_cost: number }).total_cost).toBe(0);
  });

  it('records a token usage record per completion', async () => {
    const r = await complete({ user_prompt: 'usage please', agent_name: 'helper', operation_id: 'op-usage-1' });
    const usage = await app.services.store.container('usage').read('owner@local.test', 'op-usage-1');
    expect(usage).toMatchObject({
      operation_id: 'op-usage-1',
      session_id: null,
      upn: 'owner@local.test',
      agent_name: 'helper',
      model_deployment_name: 'helper-deployment',
      total_tokens: (r.body as { total_tokens: number }).total_tokens,
    });
  });

  describe('validation', () => {
    const expectField = async (body: Record<string, unknown>, field: string, message: string) => {
      const r = await complete(body);
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({
        error: { code: 'ValidationError', message, details: expect.arrayContaining([{ field, message }]) as unknown },
      });
    };
    it('answers each rule with its message', async () => {
      await expectField({ agent_name: 'helper' }, 'user_prompt', 'user_prompt is required');
      await expectField({ agent_name: 'helper', user_prompt: '   ' }, 'user_prompt', 'user_prompt is required');
      await expectField(
        { agent_name: 'helper', user_prompt: 'x', session_id: 'abc' },
        'session_id',
        'Invalid session_id format',
      );
      await expectField({ agent_name: 'nope', user_prompt: 'x' }, 'agent_name', 'Agent not found or access denied');
      await expectField(
        { agent_name: 'helper', user_prompt: 'x', settings: { model_parameters: { temperature: 1.5 } } },
        'settings.model_parameters.temperature',
        'temperature must be between 0 and 1',
      );
      await expectField(
        { agent_name: 'helper', user_prompt: 'x', settings: { model_parameters: { max_new_tokens: 0 } } },
        'settings.model_parameters.max_new_tokens',
        'max_new_tokens must be positive',
      );
      await expectField(
        { agent_name: 'helper', user_prompt: 'x', settings: { model_parameters: { max_new_tokens: 1.5 } } },
        'settings.model_parameters.max_new_tokens',
        'max_new_tokens must be positive',
      );
      expect((await complete({ agent_name: 'helper', user_prompt: 'x', surprise: true })).status).toBe(400);
    });

    it('answers 403 for an agent the caller may not use; picks the only usable agent when none is named', async () => {
      const r = await complete({ agent_name: 'helper', user_prompt: 'x' }, 'outsider@example.com');
      expect(r).toMatchObject({
        status: 403,
        body: { error: { code: 'Forbidden', message: 'Agent not found or access denied' } },
      });
      await grantReader('single@example.com', 'plain');
      const only = await complete({ user_prompt: 'who answers?' }, 'single@example.com');
      expect(only.status).toBe(200);
      expect(llm.requests.at(-1)?.body.model).toBe('plain-deployment');
      const ambiguous = await complete({ user_prompt: 'who answers?' });
      expect(ambiguous).toMatchObject({ status: 400, body: { error: { details: [{ field: 'agent_name' }] } } });
      expect((await complete({ user_prompt: 'x' }, 'nobody@example.com')).status).toBe(400);
    });

    it("answers 404 for a session that is not the caller's, and 401 without credentials", async () => {
      expect((await complete({ agent_name: 'helper', user_prompt: 'x', session_id: randomUUID() })).status).toBe(404);
      expect(
        (
          await fetch(core('/completions'), {
            method: 'POST',
            body: '{}',
            headers: { 'content-type': 'application/json' },
          })
        ).status,
      ).toBe(401);
    });
  });

  describe('sessions', () => {
    it("keeps each user's sessions private", async () => {
      await grantReader('bob@example.com', 'helper');
      const alice = await newSession();
      await complete({ user_prompt: 'secret plan', session_id: alice, agent_name: 'helper' });
      const bob = 'bob@example.com';
      expect((await app.call('GET', core(`/sessions/${alice}/messages`), { as: bob })).status).toBe(404);
      expect((await complete({ user_prompt: 'peek', session_id: alice, agent_name: 'helper' }, bob)).status).toBe(404);
      expect((await app.call('DELETE', core(`/sessions/${alice}`), { as: bob })).status).toBe(404);
      const messages = (await app.call('GET', core(`/sessions/${alice}/messages`))).body as { id: string }[];
      expect(
        (
          await app.call('POST', core(`/sessions/${alice}/message/${messages[1]!.id}/rate`), {
            as: bob,
            body: { rating: true },
          })
        ).status,
      ).toBe(404);
      const bobs = (await app.call('GET', core('/sessions'), { as: bob })).body as { id: string }[];
      expect(bobs.map((s) => s.id)).not.toContain(alice);
      expect(((await app.call('GET', core(`/sessions/${alice}/messages`))).body as unknown[]).length).toBe(2);
      expect(
        ((await app.call('GET', core(`/sessions/${alice}/messages`))).body as { rating?: unknown }[])[1]?.rating,
      ).toBeNull();
    });

    it('creates sessions with their documented fields, and deletes a session with its messages', async () => {
      const created = await app.call('POST', core('/sessions'), { body: { name: 'Planning' } });
      expect(created.status).toBe(200);
      expect(created.body).toEqual({
        id: expect.any(String) as string,
        name: 'Planning',
        type: 'Session',
        upn: 'owner@local.test',
        messages: [],
        created_on: expect.any(String) as string,
      });
      const id = (created.body as { id: string }).id;
      await complete({ user_prompt: 'hello', session_id: id, agent_name: 'helper' });
      const del = await app.call('DELETE', core(`/sessions/${id}`));
      expect(del.status).toBe(200);
      expect(del.body).toBeUndefined();
      expect((await app.call('GET', core(`/sessions/${id}/messages`))).status).toBe(404);
      expect((await app.call('GET', core('/sessions/not-a-guid/messages'))).status).toBe(400);
    });

    it('rates assistant messages only', async () => {
      const id = await newSession();
      await complete({ user_prompt: 'rate me', session_id: id, agent_name: 'helper' });
      const [user, assistant] = (await app.call('GET', core(`/sessions/${id}/messages`))).body as { id: string }[];
      const rated = await app.call('POST', core(`/sessions/${id}/message/${assistant!.id}/rate`), {
        body: { rating: false, comments: 'too short' },
      });
      expect(rated).toMatchObject({
        status: 200,
        body: { id: assistant!.id, rating: false, rating_comments: 'too short' },
      });
      expect(
        await app.call('POST', core(`/sessions/${id}/message/${user!.id}/rate`), { body: { rating: true } }),
      ).toMatchObject({
        status: 400,
        body: {
          error: {
            code: 'ValidationError',
            message: 'Only assistant messages can be rated',
            details: [{ field: 'messageId', message: 'Only assistant messages can be rated' }],
          },
        },
      });
      expect(
        (await app.call('POST', core(`/sessions/${id}/message/unknown/rate`), { body: { rating: true } })).status,
      ).toBe(404);
      expect(
        (await app.call('POST', core(`/sessions/${id}/message/${assistant!.id}/rate`), { body: { rating: 'yes' } }))
          .status,
      ).toBe(400);
    });
  });

  it('lets a token holder use its one agent, with sessions of its own', async () => {
    const issued = await app.call(
      'POST',
      `${app.management}/instances/${INSTANCE}/providers/Svc.Agent/agents/plain/agent-access-tokens`,
      { body: { type: 'agent-access-token', name: 'bot' } },
    );
    const token = (issued.body as { resource: string }).resource;
    const asToken = (method: string, path: string, body?: unknown) =>
      fetch(core(path), {
        method,
        headers: { 'x-agent-access-token': token, 'content-type': 'application/json' },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
    const implicit = await asToken('POST', '/completions', { user_prompt: 'hi from a bot' });
    expect(implicit.status).toBe(200);
    expect(llm.requests.at(-1)?.body.model).toBe('plain-deployment');
    expect((await asToken('POST', '/completions', { user_prompt: 'x', agent_name: 'helper' })).status).toBe(403);
    const session = (await (await asToken('POST', '/sessions', { name: 'bot session' })).json()) as {
      id: string;
      upn: string;
    };
    expect(session.upn).toMatch(/^aat_plain_[0-9a-f-]{36}@agent-platform\.internal$/);
    expect((await asToken('POST', '/completions', { user_prompt: 'in session', session_id: session.id })).status).toBe(
      200,
    );
    // The creator's sessions and the token's are separate.
    expect(((await app.call('GET', core('/sessions'))).body as { id: string }[]).map((x) => x.id)).not.toContain(
      session.id,
    );
    expect((await app.call('GET', core(`/sessions/${session.id}/messages`))).status).toBe(404);
  });

  describe('upstream failures', () => {
    it(
      'retries a 429 honouring Retry-After, and maps persistent failures to 503, 502 and 504 without storing ' +
        'anything',
      async () => {
        const sessionId = await newSession();
        const before = llm.requests.length;
        llm.next({ status: 429, headers: { 'retry-after': '1' } });
        const started = Date.now();
        const retried = await complete({ user_prompt: 'after a wait', session_id: sessionId, agent_name: 'helper' });
        expect(retried.status).toBe(200);
        expect(Date.now() - started).toBeGreaterThanOrEqual(900);
        expect(llm.requests.length - before).toBe(2);

        llm.next(
          { status: 429, headers: { 'retry-after': '0' } },
          { status: 429, headers: { 'retry-after': '0' } },
          { status: 429, headers: { 'retry-after': '7' } },
        );
        const limited = await complete({ user_prompt: 'limited', session_id: sessionId, agent_name: 'helper' });
        expect(limited).toMatchObject({ status: 503, body: { error: { code: 'UpstreamRateLimited' } } });
        expect(limited.headers.get('retry-after')).toBe('7');

        llm.next({ status: 500 }, { status: 500 }, { status: 500 });
        expect(await complete({ user_prompt: 'broken', session_id: sessionId, agent_name: 'helper' })).toMatchObject({
          status: 502,
          body: { error: { code: 'UpstreamError' } },
        });

        const messages = (await app.call('GET', core(`/sessions/${sessionId}/messages`))).body as { text: string }[];
        expect(messages.map((m) => m.text)).toEqual(['after a wait', 'Echo: after a wait\n\nAnswer briefly.']);
      },
    );

    it('answers 504 when the model does not answer within the endpoint timeout', async () => {
      const slow = await startMockLlm();
      await seedAgent(app, 'slow', { llmUrl: slow.url, timeoutSeconds: 1 });
      slow.next({ hangMs: 5000 }, { hangMs: 5000 }, { hangMs: 5000 });
      const app2 = app;
      const r = await app2.call('POST', core('/completions'), {
        body: { user_prompt: 'hello?', agent_name: 'slow', operation_id: 'op-timeout' },
      });
      expect(r).toMatchObject({ status: 504, body: { error: { code: 'UpstreamTimeout' } } });
      // A failed operation leaves a record for error rates, with no tokens and no message.
      expect(await app.services.store.container('usage').read('owner@local.test', 'op-timeout')).toMatchObject({
        status: 'Failed',
        error_code: 'UpstreamTimeout',
        total_tokens: 0,
      });
      await slow.close();
    }, 30_000);
  });

  describe('quotas', () => {
    it('answers 429 with the quota response and Retry-After once a quota is exceeded, per user', async () => {
      const key = 'Svc:Quota:Definitions';
      const definitions = [
        {
          name: 'AgentCompletionRequestRate',
          context: 'CoreAPI:Completions:plain',
          metric_partition: 'UserPrincipalName',
          metric_limit: 2,
          metric_window_seconds: 60,
          lockout_duration_seconds: 30,
        },
      ];
      await app.call(
        'POST',
        `${app.management}/instances/${INSTANCE}/providers/Svc.Configuration/appConfigurations/${key}`,
        { body: { name: key, key, value: JSON.stringify(definitions) } },
      );
      const upn = 'quota@example.com';
      await grantReader(upn, 'plain');
      await grantReader(upn, 'helper');
      expect((await complete({ user_prompt: '1', agent_name: 'plain' }, upn)).status).toBe(200);
      expect((await complete({ user_prompt: '2', agent_name: 'plain' }, upn)).status).toBe(200);
      const third = await complete({ user_prompt: '3', agent_name: 'plain' }, upn);
      expect(third.status).toBe(429);
      expect(third.body).toEqual({
        quota_exceeded: true,
        quota_name: 'AgentCompletionRequestRate',
        retry_after_seconds: 30,
        message: expect.any(String) as string,
      });
      expect(third.headers.get('retry-after')).toBe('30');
      // Locked out: still 429, with the remaining time.
      const fourth = await complete({ user_prompt: '4', agent_name: 'plain' }, upn);
      expect(fourth.status).toBe(429);
      expect(Number(fourth.headers.get('retry-after'))).toBeLessThanOrEqual(30);
      // Another agent and another user are not limited.
      expect((await complete({ user_prompt: '5', agent_name: 'helper' }, upn)).status).toBe(200);
      expect((await complete({ user_prompt: '6', agent_name: 'plain' })).status).toBe(200);
      await app.call(
        'DELETE',
        `${app.management}/instances/${INSTANCE}/providers/Svc.Configuration/appConfigurations/${key}`,
      );
    });
  });
});
