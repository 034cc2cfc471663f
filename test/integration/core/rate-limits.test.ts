// Rate limits over HTTP: every completion answer (JSON, event stream, 202, 429) carries the
// RateLimit-Policy and RateLimit headers of the quota closest to its limit; a tokens quota counts the
// tokens of completed calls and refuses once they reach the limit.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockLlm, type MockLlm } from '../../../scripts/mock-llm.js';
import { grantReader, seedAgent } from '../../support/agents.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { INSTANCE } from '../../support/services.js';

const KEY = 'Svc:Quota:Definitions';

describe('rate-limit headers', () => {
  let app: TestApp;
  let llm: MockLlm;
  const core = (path: string) => `${app.core}/instances/${INSTANCE}${path}`;
  const setQuotas = async (definitions: unknown[]) => {
    const r = await app.call(
      'POST',
      `${app.management}/instances/${INSTANCE}/providers/Svc.Configuration/appConfigurations/${KEY}`,
      { body: { name: KEY, key: KEY, value: JSON.stringify(definitions) } },
    );
    expect(r.status).toBe(200);
  };
  const quota = (name: string, limit: number, extra: Record<string, unknown> = {}) => ({
    name,
    context: 'CoreAPI:Completions:limited',
    metric_partition: 'UserPrincipalName',
    metric_limit: limit,
    metric_window_seconds: 3600,
    ...extra,
  });
  const remaining = (h: Headers) => Number(/;r=(\d+);/.exec(h.get('ratelimit') ?? '')?.[1]);

  beforeAll(async () => {
    llm = await startMockLlm();
    app = await startTestApp({ MODEL_MAX_RETRIES: '0' });
    await seedAgent(app, 'limited', { llmUrl: llm.url });
    await seedAgent(app, 'free', { llmUrl: llm.url });
    await grantReader(app, 'second@example.com', 'limited');
  });
  afterAll(async () => {
    await app.call(
      'DELETE',
      `${app.management}/instances/${INSTANCE}/providers/Svc.Configuration/appConfigurations/${KEY}`,
    );
    await app.close();
    await llm.close();
  });

  it('puts them on the JSON answer, the event stream, the 202 and the 429, counting each request', async () => {
    await setQuotas([quota('Requests', 4)]);
    const sync = await app.call('POST', core('/completions'), { body: { user_prompt: 'one', agent_name: 'limited' } });
    expect(sync.status).toBe(200);
    expect(sync.headers.get('ratelimit-policy')).toBe('"Requests";q=4;w=3600');
    expect(sync.headers.get('ratelimit')).toMatch(/^"Requests";r=3;t=\d+$/);
    expect(Number(/t=(\d+)/.exec(sync.headers.get('ratelimit')!)![1])).toBeLessThanOrEqual(3600);

    const stream = await fetch(core('/completions'), {
      method: 'POST',
      headers: {
        authorization: `Bearer ${await app.token()}`,
        'content-type': 'application/json',
        accept: 'text/event-stream',
      },
      body: JSON.stringify({ user_prompt: 'two', agent_name: 'limited' }),
    });
    expect(stream.headers.get('content-type')).toContain('text/event-stream');
    expect(remaining(stream.headers)).toBe(2);
    await stream.text();

    const started = await app.call('POST', core('/async-completions'), {
      body: { user_prompt: 'three', agent_name: 'limited' },
    });
    expect(started.status).toBe(202);
    expect(remaining(started.headers)).toBe(1);

    expect(
      remaining(
        (await app.call('POST', core('/completions'), { body: { user_prompt: 'four', agent_name: 'limited' } }))
          .headers,
      ),
    ).toBe(0);
    const refused = await app.call('POST', core('/completions'), {
      body: { user_prompt: 'five', agent_name: 'limited' },
    });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('ratelimit-policy')).toBe('"Requests";q=4;w=3600');
    expect(remaining(refused.headers)).toBe(0);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);

    // A failure after admission carries them too; an agent no quota covers gets none.
    llm.next({ status: 422 });
    const other = await app.call('POST', core('/completions'), {
      body: { user_prompt: 'six', agent_name: 'limited' },
      as: 'second@example.com',
    });
    expect(other.status).toBe(502);
    expect(remaining(other.headers)).toBe(3);
    const free = await app.call('POST', core('/completions'), { body: { user_prompt: 'seven', agent_name: 'free' } });
    expect(free.status).toBe(200);
    expect(free.headers.get('ratelimit')).toBeNull();
    expect(free.headers.get('ratelimit-policy')).toBeNull();
  });

  it('counts tokens of completed calls for a tokens quota, and shows the quota closest to its limit', async () => {
    await setQuotas([quota('Calls', 100), quota('Tokens', 40, { metric: 'tokens' })]);
    const ask = () =>
      app.call('POST', core('/completions'), {
        body: { user_prompt: 'count these five words', agent_name: 'limited' },
      });
    const first = await ask();
    expect(first.status).toBe(200);
    // Tokens: 40 of 40 left (1.0); Calls: 99 of 100 (0.99) is closer to its limit.
    expect(first.headers.get('ratelimit')).toMatch(/^"Calls";r=99;/);
    const used = (first.body as { total_tokens: number }).total_tokens;
    expect(used).toBeGreaterThan(5);

    let left = 40 - used;
    let answered = first;
    while (answered.status === 200) {
      answered = await ask();
      if (answered.status !== 200) break;
      // Tokens is now the closest: its r is what the completed calls left.
      expect(answered.headers.get('ratelimit')).toBe(
        `"Tokens";r=${left};t=${/t=(\d+)/.exec(answered.headers.get('ratelimit')!)![1]}`,
      );
      left -= (answered.body as { total_tokens: number }).total_tokens;
    }
    expect(left).toBeLessThanOrEqual(0);
    expect(answered.status).toBe(429);
    expect(answered.body).toMatchObject({ quota_exceeded: true, quota_name: 'Tokens' });
    expect(answered.headers.get('ratelimit')).toMatch(/^"Tokens";r=0;/);
  });

  it('refuses quota definitions it could not enforce, however the key is spelt, and keeps those in force', async () => {
    await setQuotas([quota('Kept', 50)]);
    const bad: [unknown, RegExp][] = [
      ['not json', /JSON array of quota definitions/],
      [{ name: 'not a list' }, /JSON array of quota definitions/],
      [[quota('Zero', 0)], /definition 0 metric_limit/],
      [[quota('Ok', 5), quota('Where', 5, { context: 'Somewhere:Else' })], /definition 1 context/],
      [[quota('Twice', 5), quota('Twice', 6)], /defines the quota Twice twice/],
      [[quota('Odd', 5, { metric: 'bytes' })], /definition 0 metric/],
    ];
    for (const key of [KEY, KEY.toLowerCase()]) {
      for (const [definitions, message] of bad) {
        const value = typeof definitions === 'string' ? definitions : JSON.stringify(definitions);
        const r = await app.call(
          'POST',
          `${app.management}/instances/${INSTANCE}/providers/Svc.Configuration/appConfigurations/${key}`,
          { body: { name: key, key, value } },
        );
        expect(r.status, value).toBe(400);
        expect(JSON.stringify(r.body), value).toMatch(message);
      }
    }
    const r = await app.call('POST', core('/completions'), {
      body: { user_prompt: 'still limited', agent_name: 'limited' },
    });
    expect(r.headers.get('ratelimit-policy')).toBe('"Kept";q=50;w=3600');
  });
});
