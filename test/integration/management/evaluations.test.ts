// Evaluations: 50 cases of rule checks run on the queue against the mock model, a judge that fails a bad
// answer with its reason, runs recorded against the agent version they ran on, bad definitions refused, and
// a rater's thumbs-down becoming a candidate case only with the rater's consent, the prompt only.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockLlm, type MockLlm } from '../../../scripts/mock-llm.js';
import { grantReader, seedAgent } from '../../support/agents.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { INSTANCE } from '../../support/services.js';

interface Run {
  status: string;
  agent_version: number | null;
  pass_rate: number | null;
  duration_ms: number | null;
  total_tokens: number;
  results: { user_prompt: string; passed: boolean; reason: string; latency_ms: number; total_tokens: number }[];
}

const verdict = (pass: boolean, reason: string) => ({
  raw: JSON.stringify({
    choices: [{ index: 0, message: { role: 'assistant', content: `Verdict: ${JSON.stringify({ pass, reason })}` } }],
    usage: { prompt_tokens: 40, completion_tokens: 10 },
  }),
});

describe('evaluations', () => {
  let app: TestApp;
  let llm: MockLlm;
  let judgeLlm: MockLlm;
  const agentPath = `/instances/${INSTANCE}/providers/Svc.Agent/agents/evaluated`;
  const evaluations = (path = '') => `${app.management}${agentPath}/evaluations${path}`;
  const judgeModel = `/instances/${INSTANCE}/providers/Svc.AIModel/aiModels/judge-model`;

  /** Starts a run and polls it until it ends; answers the run and how long that took. */
  async function run(name: string): Promise<{ run: Run; ms: number }> {
    const started = performance.now();
    const r = await app.call('POST', evaluations(`/${name}/run`));
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    const objectId = (r.body as { object_id: string }).object_id;
    expect(objectId).toMatch(new RegExp(`^${agentPath}/evaluations/${name}/runs/[0-9a-f-]{36}$`));
    for (;;) {
      const polled = await app.call('GET', `${app.management}${objectId}`);
      expect(polled.status).toBe(200);
      const body = polled.body as Run;
      if (body.status === 'Completed' || body.status === 'Failed')
        return { run: body, ms: performance.now() - started };
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  beforeAll(async () => {
    [llm, judgeLlm] = await Promise.all([startMockLlm(), startMockLlm()]);
    app = await startTestApp({ ALLOW_PRIVATE_NETWORK: 'true' });
    await seedAgent(app, 'evaluated', { llmUrl: llm.url, prices: { prompt: 1, completion: 2 } });
    await seedAgent(app, 'judge', { llmUrl: judgeLlm.url });
  });
  afterAll(async () => {
    await app.close();
    await Promise.all([llm.close(), judgeLlm.close()]);
  });

  it('runs 50 cases of rule checks on the queue in under a minute, each with its verdict and reason', async () => {
    const cases = Array.from({ length: 50 }, (_, i) => {
      if (i % 5 === 0) return { user_prompt: `Question ${i}`, expect: { contains: 'something it never says' } };
      if (i % 5 === 1)
        return { user_prompt: `Question ${i}`, expect: { contains: [`question ${i}`, 'echo'], not_contains: 'sorry' } };
      if (i % 5 === 2) return { user_prompt: `Order ${i}`, expect: { regex: `^Echo: Order \\d+$` } };
      if (i % 5 === 3)
        return {
          user_prompt: `\`\`\`json\n{"n": ${i}}\n\`\`\``,
          expect: { json_schema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] } },
        };
      return { user_prompt: `Say hi ${i}`, expect: { not_contains: 'goodbye' } };
    });
    expect((await app.call('POST', evaluations('/regression'), { body: { name: 'regression', cases } })).status).toBe(
      200,
    );
    const { run: done, ms } = await run('regression');
    console.log(
      `evaluation of 50 cases against the mock model: ${Math.round(ms)} ms from run to Completed (run ` +
        `${done.duration_ms} ms)`,
    );
    expect(done.status).toBe('Completed');
    expect(done.results).toHaveLength(50);
    expect(done.pass_rate).toBe(0.8);
    expect(done.results.map((r) => r.user_prompt)).toEqual(cases.map((c) => c.user_prompt));
    expect(done.results[0]).toMatchObject({
      passed: false,
      reason: 'the answer does not contain "something it never says"',
    });
    expect(done.results[1]).toMatchObject({ passed: true, reason: 'Every check passed' });
    expect(done.results[3]?.passed).toBe(true);
    expect(done.results.every((r) => r.total_tokens > 0 && r.latency_ms >= 0)).toBe(true);
    expect(done.agent_version).toBe(1);
  }, 90_000);

  it('fails a bad answer by the judge, with the judge’s reason', async () => {
    const body = {
      name: 'judged',
      judge_ai_model_object_id: judgeModel,
      cases: [{ user_prompt: 'What is 2 + 2?', expect: { judge: 'The answer states that the result is 4.' } }],
    };
    expect((await app.call('POST', evaluations('/judged'), { body })).status).toBe(200);
    judgeLlm.next(verdict(false, 'It repeats the question instead of saying 4.'));
    const failed = (await run('judged')).run;
    expect(failed.results[0]).toMatchObject({
      passed: false,
      reason: 'Judge: It repeats the question instead of saying 4.',
    });
    expect(failed.pass_rate).toBe(0);
    // The judge was given the rubric, the prompt and the agent's answer.
    const asked = JSON.stringify(judgeLlm.requests.at(-1)?.body.messages);
    expect(asked).toContain('The answer states that the result is 4.');
    expect(asked).toContain('Echo: What is 2 + 2?');

    judgeLlm.next(verdict(true, 'Close enough.'));
    expect((await run('judged')).run.results[0]).toMatchObject({ passed: true, reason: 'Judge: Close enough.' });
    judgeLlm.next({
      raw: JSON.stringify({ choices: [{ index: 0, message: { role: 'assistant', content: 'I think it is fine' } }] }),
    });
    expect((await run('judged')).run.results[0]).toMatchObject({
      passed: false,
      reason: 'The judge did not answer a verdict: I think it is fine',
    });
  });

  it('records the agent version each run ran on, for runs side by side', async () => {
    const body = { name: 'versions', cases: [{ user_prompt: 'Hello', expect: { contains: 'hello' } }] };
    expect((await app.call('POST', evaluations('/versions'), { body })).status).toBe(200);
    const before = (await run('versions')).run;
    const agent = await app.call('GET', `${app.management}${agentPath}`);
    const definition = (agent.body as { resource: Record<string, unknown> }).resource;
    expect(
      (await app.call('POST', `${app.management}${agentPath}`, { body: { ...definition, description: 'changed' } }))
        .status,
    ).toBe(200);
    const after = (await run('versions')).run;
    expect(after.agent_version).toBe((before.agent_version ?? 0) + 1);
    const runs = await app.call('GET', evaluations('/versions/runs'));
    expect((runs.body as Run[]).map((r) => r.agent_version)).toEqual([after.agent_version, before.agent_version]);
  });

  it('refuses definitions it could not run, and anyone without write access to the agent', async () => {
    const bad = async (cases: unknown[], extra: Record<string, unknown> = {}) =>
      app.call('POST', evaluations('/bad'), { body: { name: 'bad', cases, ...extra } });
    const regex = await bad([{ user_prompt: 'x', expect: { regex: '(a)\\1' } }]);
    expect(regex.status).toBe(400);
    expect(JSON.stringify(regex.body)).toContain('cases[0].expect');
    expect((await bad([{ user_prompt: 'x', expect: { json_schema: { type: 'no-such-type' } } }])).status).toBe(400);
    expect((await bad([{ user_prompt: 'x', expect: {} }])).status).toBe(400);
    const noJudge = await bad([{ user_prompt: 'x', expect: { judge: 'be right' } }]);
    expect(JSON.stringify(noJudge.body)).toContain('judge_ai_model_object_id');
    expect(
      (
        await bad([{ user_prompt: 'x', expect: { judge: 'be right' } }], {
          judge_ai_model_object_id: `/instances/${INSTANCE}/providers/Svc.AIModel/aiModels/nope`,
        })
      ).status,
    ).toBe(400);
    await grantReader(app, 'user@example.com', 'evaluated');
    expect((await app.call('GET', evaluations(), { as: 'user@example.com' })).status).toBe(403);
    expect((await app.call('POST', evaluations('/regression/run'), { as: 'user@example.com' })).status).toBe(403);
  });

  it('turns a thumbs-down into a candidate case only when the rater shares it: the prompt, never who', async () => {
    const rater = 'rater@example.com';
    await grantReader(app, rater, 'evaluated');
    const ask = async (prompt: string) => {
      const session = await app.call('POST', `${app.core}/instances/${INSTANCE}/sessions`, {
        body: { name: 'rated' },
        as: rater,
      });
      const sessionId = (session.body as { id: string }).id;
      expect(
        (
          await app.call('POST', `${app.core}/instances/${INSTANCE}/completions`, {
            body: { agent_name: 'evaluated', user_prompt: prompt, session_id: sessionId },
            as: rater,
          })
        ).status,
      ).toBe(200);
      const messages = await app.call('GET', `${app.core}/instances/${INSTANCE}/sessions/${sessionId}/messages`, {
        as: rater,
      });
      const answer = (messages.body as { id: string; sender: string }[]).find((m) => m.sender === 'Assistant');
      return (body: Record<string, unknown>) =>
        app.call('POST', `${app.core}/instances/${INSTANCE}/sessions/${sessionId}/message/${answer?.id ?? ''}/rate`, {
          body,
          as: rater,
        });
    };
    const candidates = async () =>
      (await app.call('GET', `${app.management}${agentPath}/evaluation-candidates`)).body as {
        id: string;
        user_prompt: string;
      }[];

    const kept = await ask('Where is the private handbook?');
    expect((await kept({ rating: false, comments: 'Wrong place' })).status).toBe(200);
    expect(await candidates()).toEqual([]);
    expect((await kept({ rating: false, comments: 'Wrong place', share_prompt_with_owner: true })).status).toBe(200);
    const shared = await candidates();
    expect(shared).toHaveLength(1);
    expect(shared[0]).toMatchObject({ user_prompt: 'Where is the private handbook?', comments: 'Wrong place' });
    expect(JSON.stringify(shared)).not.toContain(rater);
    expect(JSON.stringify(shared)).not.toContain('Echo:');
    // A reader of the agent cannot see them; rating again without sharing withdraws it.
    expect((await app.call('GET', `${app.management}${agentPath}/evaluation-candidates`, { as: rater })).status).toBe(
      403,
    );
    expect((await kept({ rating: true })).status).toBe(200);
    expect(await candidates()).toEqual([]);

    const dismissed = await ask('Another question');
    await dismissed({ rating: false, share_prompt_with_owner: true });
    const [candidate] = await candidates();
    expect(
      (await app.call('DELETE', `${app.management}${agentPath}/evaluation-candidates/${candidate?.id ?? ''}`)).status,
    ).toBe(200);
    expect(await candidates()).toEqual([]);
  });
});
