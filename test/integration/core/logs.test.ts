// What an operator sees (issue 19): one access line per request with the route, status, duration, request
// id and caller; a model failure logged once with its cause and the operation id; no credential anywhere.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockLlm, type MockLlm } from '../../../scripts/mock-llm.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { seedAgent } from '../../support/agents.js';
import { INSTANCE } from '../../support/services.js';

describe('logs', () => {
  let llm: MockLlm;
  let app: TestApp;

  beforeAll(async () => {
    llm = await startMockLlm();
    process.env.SVC_SECRET_LOGGED_KEY = 'sk-do-not-log-me';
    app = await startTestApp({ MODEL_MAX_RETRIES: '0' });
    await seedAgent(app, 'logged', { llmUrl: llm.url });
  });
  afterAll(async () => {
    await app.close();
    await llm.close();
  });

  it(
    'writes one access line for a completion and one failure line with the operation id and the cause, and no ' +
      'secret',
    async () => {
      const records = app.services.log.records;
      const from = records.length;
      llm.next({ status: 500, body: { error: { message: 'the GPU caught fire' } } });
      const token = await app.token();
      const r = await fetch(`${app.core}/instances/${INSTANCE}/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'x-request-id': 'req-logs-1' },
        body: JSON.stringify({ user_prompt: 'hello', agent_name: 'logged', operation_id: 'op-logs-1' }),
      });
      expect(r.status).toBe(502);
      const mine = records.slice(from);
      const access = mine.filter((x) => x.message === 'Request' && x.fields?.request_id === 'req-logs-1');
      expect(access).toHaveLength(1);
      expect(access[0]?.fields).toMatchObject({
        method: 'POST',
        route: 'completions-create',
        status: 502,
        caller: expect.any(String) as string,
      });
      expect(access[0]?.fields?.duration_ms).toEqual(expect.any(Number));
      const failures = mine.filter((x) => x.message === 'Completion failed');
      expect(failures).toHaveLength(1);
      expect(failures[0]?.fields).toMatchObject({
        operation_id: 'op-logs-1',
        agent_name: 'logged',
        code: expect.stringMatching(/^Upstream/) as string,
      });
      expect(String(failures[0]?.fields?.error)).toContain('500');
      const text = JSON.stringify(mine);
      expect(text).not.toContain(token);
      expect(text).not.toContain('sk-do-not-log-me');
      expect(text).not.toContain('hello');
    },
  );
});
