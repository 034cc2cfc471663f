// Hostile requests against the service as users run it (`npm start`, one process): bodies that are cut off
// or malformed, headers that are too large, connections that must stay usable; then a shutdown that must
// finish while a model call hangs. After each attack the same process is still serving.
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { freePort } from '../../../scripts/azurite.js';
import { startMockLlm, type MockLlm } from '../../../scripts/mock-llm.js';
import { runScript, startScript, type Running } from '../../support/processes.js';
import { rawRequest, truncatedMultipart } from '../../support/http.js';
import { INSTANCE, tempDir } from '../../support/services.js';

describe('a hostile request never takes the process down', () => {
  let env: Record<string, string>;
  let app: Running;
  let core: string;
  let management: string;
  let token: string;
  let llm: MockLlm;

  const stillServing = async () => {
    expect(app.child.exitCode).toBeNull();
    const r = await rawRequest(`${core}/status`);
    expect(r.status).toBe(200);
    expect((await rawRequest(`${management}/status`)).status).toBe(200);
  };
  const pluginUpload = `/instances/${INSTANCE}/providers/Svc.Platform/pluginPackages/Python-x?api-version=2024-02-16`;

  beforeAll(async () => {
    llm = await startMockLlm();
    const [corePort, managementPort] = [await freePort(), await freePort()];
    env = {
      DATA_DIR: tempDir(),
      CORE_PORT: String(corePort),
      MANAGEMENT_PORT: String(managementPort),
      AzureWebJobsStorage: inject('storageConnectionString'),
      ASYNC_COMPLETIONS_QUEUE: `hard-${corePort}`,
    };
    core = `http://127.0.0.1:${corePort}`;
    management = `http://127.0.0.1:${managementPort}`;
    app = await startScript('start', env, /Get a token/);
    token = (await runScript('token', [], env)).stdout.trim();
  });
  afterAll(async () => {
    await app.stop();
    await llm.close();
  });

  it('answers 400 to a plugin upload whose file part never reaches its closing boundary; keeps serving', async () => {
    const r = await rawRequest(`${management}${pluginUpload}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'multipart/form-data; boundary=XX' },
      body: truncatedMultipart(),
    });
    expect(r.status).toBe(400);
    expect(JSON.parse(r.body)).toMatchObject({
      error: { code: 'BadRequest', message: expect.stringContaining('Malformed multipart body') as string },
    });
    await stillServing();
  });

  it('answers 400 to a multipart body without a boundary, and to a truncated file upload', async () => {
    const noBoundary = await rawRequest(`${management}${pluginUpload}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'multipart/form-data' },
      body: truncatedMultipart(),
    });
    expect(noBoundary.status).toBe(400);
    const file = await rawRequest(`${core}/instances/${INSTANCE}/files/upload`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'multipart/form-data; boundary=XX' },
      body: truncatedMultipart('file', 'notes.txt'),
    });
    expect(file.status).toBe(400);
    expect(JSON.parse(file.body)).toMatchObject({ error: { code: 'ValidationError', details: [{ field: 'body' }] } });
    await stillServing();
  });

  it('keeps a keep-alive connection usable after a rejected multipart request', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const rejected = await rawRequest(`${management}${pluginUpload}`, {
        method: 'POST',
        agent,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'multipart/form-data; boundary=XX' },
        body: Buffer.concat([truncatedMultipart(), Buffer.alloc(200_000, 0x61)]),
      });
      expect(rejected.status).toBe(400);
      const next = await rawRequest(`${management}/status`, { agent });
      expect(next.status).toBe(200);
      expect(next.reusedSocket).toBe(true);
      // An unauthenticated upload is refused before its body is read: the body is dropped, the connection kept.
      const refused = await rawRequest(`${core}/instances/${INSTANCE}/files/upload`, {
        method: 'POST',
        agent,
        headers: { 'content-type': 'multipart/form-data; boundary=XX' },
        body: Buffer.alloc(300_000, 0x62),
      });
      expect(refused.status).toBe(401);
      expect((await rawRequest(`${core}/status`, { agent })).status).toBe(200);
    } finally {
      agent.destroy();
    }
  });

  it('answers oversized headers with 431 in the API envelope, with a request id', async () => {
    for (const [url, code] of [
      [`${core}/status`, 'RequestHeaderFieldsTooLarge'],
      [`${management}/status`, 'RequestHeaderFieldsTooLarge'],
    ] as const) {
      const r = await rawRequest(url, { headers: { 'x-padding': 'a'.repeat(20_000) } });
      expect(r.status).toBe(431);
      expect(r.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
      expect(r.headers['content-type']).toContain('application/json');
      expect(JSON.parse(r.body)).toEqual({ error: { code, message: 'The request headers are too large' } });
    }
    await stillServing();
  });

  it("marks answers that carry users' content as not to be sniffed or cached", async () => {
    const r = await rawRequest(`${core}/instances/${INSTANCE}/sessions`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(r.status).toBe(200);
    expect(r.headers['x-content-type-options']).toBe('nosniff');
    expect(r.headers['cache-control']).toBe('no-store');
  });

  it('stops within a bounded time on SIGTERM while a model call hangs', async () => {
    const post = (path: string, body: unknown) =>
      rawRequest(`${management}/instances/${INSTANCE}/providers/${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const p = (path: string) => `/instances/${INSTANCE}/providers/${path}`;
    expect(
      (
        await post('Svc.Configuration/apiEndpointConfigurations/hang', {
          name: 'hang',
          provider: 'openai',
          url: `${llm.url}/v1`,
          authentication_type: 'None',
          timeout_seconds: 300,
        })
      ).status,
    ).toBe(200);
    expect(
      (
        await post('Svc.AIModel/aiModels/hang', {
          name: 'hang',
          model_type: 'completion',
          deployment_name: 'd',
          api_endpoint_object_id: p('Svc.Configuration/apiEndpointConfigurations/hang'),
        })
      ).status,
    ).toBe(200);
    expect((await post('Svc.Prompt/prompts/hang', { name: 'hang', prefix: 'x' })).status).toBe(200);
    expect(
      (
        await post('Svc.Agent/workflows/hang', {
          name: 'hang',
          workflow_type: 'chat',
          workflow_host: 'builtin',
          main_ai_model_object_id: p('Svc.AIModel/aiModels/hang'),
          main_prompt_object_id: p('Svc.Prompt/prompts/hang'),
        })
      ).status,
    ).toBe(200);
    expect(
      (await post('Svc.Agent/agents/hang', { name: 'hang', workflow_object_id: p('Svc.Agent/workflows/hang') })).status,
    ).toBe(200);
    llm.next({ hangMs: 600_000 }, { hangMs: 600_000 });
    const before = llm.requests.length;
    const started = await rawRequest(`${core}/instances/${INSTANCE}/async-completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ user_prompt: 'hang', agent_name: 'hang' }),
    });
    expect(started.status).toBe(202);
    const until = Date.now() + 15_000;
    while (llm.requests.length === before && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    expect(llm.requests.length).toBe(before + 1);
    // A sync call hangs too, on an open connection.
    void rawRequest(`${core}/instances/${INSTANCE}/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ user_prompt: 'hang', agent_name: 'hang' }),
      timeoutMs: 60_000,
    }).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 300));

    const exited = new Promise<number | null>((resolve) => app.child.once('exit', (code) => resolve(code)));
    const t0 = Date.now();
    app.child.kill('SIGTERM');
    const code = await exited;
    expect(Date.now() - t0).toBeLessThan(15_000);
    expect(code).toBe(0);
  }, 60_000);
});
