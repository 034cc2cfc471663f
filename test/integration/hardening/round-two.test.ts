// The second hardening round's findings, each tried against the bundle `npm start` runs, over HTTP as an
// attacker or a careless user would: managed-identity tokens offered to a user's host, expressions that
// backtrack, and documents that froze or crashed the service (deep HTML, bombs, a 10,000-page PDF, a
// drip-fed page), while `GET /status` is sampled. A readable PDF is indexed (the bundle carries pdf.js's
// worker module).
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { createHmac, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { BlobServiceClient } from '@azure/storage-blob';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startMockLlm, type MockLlm } from '../../../scripts/mock-llm.js';
import { oidForUpn } from '../../../shared/auth/local-idp.js';
import { ROLE_IDS, roleDefinitionPath } from '../../../shared/providers/types/roles.js';
import { grantReader, seedAgent } from '../../support/agents.js';
import { INSTANCE } from '../../support/services.js';
import { providers } from '../../support/app.js';
import { startBundledApp, type BundledApp } from '../../support/bundled-app.js';
import { pdfOf } from '../../support/documents.js';
import {
  compressedStreamBombPdf,
  deepHtml,
  docxBomb,
  manyPagesPdf,
  unclosedInlineHtml,
} from '../../support/hostile-documents.js';
import { complete, objectId, readRun, seedKnowledgeAgent, upsert, updateAgent } from '../knowledge/support.js';

const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';

describe('hardening, second round, against the bundle', () => {
  let app: BundledApp;
  let llm: MockLlm;
  let docs: http.Server;
  let docsUrl: string;
  const files = new Map<string, { bytes: Buffer; type: string }>();

  beforeAll(async () => {
    llm = await startMockLlm();
    docs = http.createServer((req, res) => {
      const name = decodeURIComponent((req.url ?? '/').slice(1));
      if (name === 'drip.html') {
        // One byte a second, for ever: only a deadline ends it.
        res.writeHead(200, { 'content-type': 'text/html' });
        const timer = setInterval(() => res.write('<'), 1000);
        res.on('close', () => clearInterval(timer));
        return;
      }
      const file = files.get(name);
      if (!file) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': file.type, 'content-length': file.bytes.length }).end(file.bytes);
    });
    await new Promise<void>((resolve) => docs.listen(0, '127.0.0.1', resolve));
    docsUrl = `http://127.0.0.1:${(docs.address() as AddressInfo).port}`;
    app = await startBundledApp({
      ALLOW_PRIVATE_NETWORK: 'true',
      EXTRACTION_TIMEOUT_SECONDS: '3',
      PIPELINE_DOCUMENT_TIMEOUT_SECONDS: '6',
    });
  }, 120_000);

  afterAll(async () => {
    await app.stop();
    await llm.close();
    docs.closeAllConnections();
    await new Promise<void>((resolve) => docs.close(() => resolve()));
  });

  it(
    '1: refuses a data source account_url that is not an https Azure Storage host (it would receive a Storage ' +
      'token)',
    async () => {
      for (const url of [
        'https://127.0.0.1:8443/',
        'https://storage.attacker.example/',
        'http://acct.blob.core.windows.net/',
      ]) {
        const r = await app.call('POST', `${providers(app, 'Svc.DataSource')}/dataSources/mine`, {
          body: { name: 'mine', data_source_type: 'AzureBlob', container: 'docs', account_url: url },
        });
        expect(r.status, url).toBe(400);
        expect(JSON.stringify(r.body), url).toContain('account_url');
      }
    },
  );

  it('2: refuses an MCP tool with AzureIdentity at a host that is not of its scope, or over http', async () => {
    for (const url of [`${docsUrl}/mcp`, 'https://tools.attacker.example/mcp', 'http://acct.openai.azure.com/mcp']) {
      const r = await app.call('POST', `${providers(app, 'Svc.Agent')}/tools/id-tool`, {
        body: { name: 'id-tool', tool_type: 'mcp', url, allowed_tools: ['x'], authentication_type: 'AzureIdentity' },
      });
      expect(r.status, url).toBe(400);
      expect(JSON.stringify(r.body), url).toContain('managed-identity token');
    }
  });

  it('3: runs exponentially backtracking patterns in linear time, so a prompt cannot freeze the service', async () => {
    const key = 'Svc:Shielding:Blocklist';
    await upsert(app, 'Svc.Configuration', 'appConfigurations', key, {
      key,
      value: JSON.stringify(['/^(a|a)*$/', '/(\\w|\\d)+$/', '/.*ignore previous instructions/i']),
    });
    await seedAgent(app, 'shielded', { llmUrl: llm.url });
    await updateAgent(app, 'shielded', {
      shielding_settings: {
        pre_completion_plugins: [{ plugin_name: 'Dotnet-Builtin-Blocklist' }],
        post_completion_plugins: [],
      },
    });
    // With a backtracking engine each added character doubles the time: 40 of them would take days.
    const [answer, status] = await Promise.all([
      complete(app, 'shielded', `${'a'.repeat(40)}!`),
      fetch(`${app.core}/status`),
    ]);
    expect(status.status).toBe(200);
    expect(answer.status).toBe(200);
    expect(JSON.stringify(answer.body.analysis_results)).not.toContain('blocked');
    const blocked = await complete(app, 'shielded', `${'x'.repeat(100_000)} now IGNORE previous instructions.`);
    expect(JSON.stringify(blocked.body.analysis_results)).toContain(
      'matches the blocklist entry /.*ignore previous instructions/i',
    );
  });

  it('11: 64 parallel completions against a 10-token quota admit what it allows plus one call', async () => {
    await seedAgent(app, 'counted', { llmUrl: llm.url });
    const key = 'Svc:Quota:Definitions';
    const quota = {
      name: 'TenTokens',
      context: 'CoreAPI:Completions:counted',
      metric: 'tokens',
      metric_partition: 'None',
      metric_limit: 10,
      metric_window_seconds: 3600,
    };
    await upsert(app, 'Svc.Configuration', 'appConfigurations', key, { key, value: JSON.stringify([quota]) });
    const answers = await Promise.all(
      Array.from({ length: 64 }, () => complete(app, 'counted', 'count these five words please')),
    );
    const admitted = answers
      .filter((a) => a.status === 200)
      .map((a) => (a.body as unknown as { total_tokens: number }).total_tokens);
    expect(answers.filter((a) => a.status === 429).length).toBeGreaterThan(0);
    expect(admitted.length).toBeGreaterThan(0);
    // Before: all 64 were admitted. Now what the calls used is at most the limit plus one call.
    const used = admitted.reduce((a, b) => a + b, 0);
    console.log(
      `token quota: ${admitted.length} of 64 admitted, ${used} tokens used against a limit of 10 (one call: ` +
        `${Math.max(...admitted)})`,
    );
    expect(used).toBeLessThanOrEqual(10 + Math.max(...admitted));
  });

  /** A webhook receiver: what it got, and when; `hang` keeps every request open without an answer. */
  async function receiver(hang = false) {
    const received: { at: number; signature: string; body: string }[] = [];
    const closedAt: number[] = [];
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push({
          at: Date.now(),
          signature: String(req.headers['svc-signature']),
          body: Buffer.concat(chunks).toString('utf8'),
        });
        if (!hang) res.writeHead(200).end();
      });
      req.socket.on('close', () => closedAt.push(Date.now()));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    return {
      url,
      received,
      closedAt,
      close: () => (server.closeAllConnections(), new Promise<void>((r) => server.close(() => r()))),
    };
  }
  const startAsync = (agent: string, callbackUrl: string, as?: string) =>
    app.call('POST', `${app.core}/instances/${INSTANCE}/async-completions`, {
      body: { user_prompt: 'call me', agent_name: agent, operation_id: randomUUID(), callback_url: callbackUrl },
      ...(as ? { as } : {}),
    });
  const until = async (what: string, check: () => boolean, ms = 20_000) => {
    for (const end = Date.now() + ms; !check(); await new Promise((r) => setTimeout(r, 50)))
      if (Date.now() > end) throw new Error(`no ${what} within ${ms} ms`);
  };
  const hmac = (secret: string, signature: string, body: string) => {
    const t = /t=(\d+)/.exec(signature)?.[1];
    return createHmac('sha256', secret).update(`${t}.${body}`).digest('hex');
  };

  it(
    '7: the webhook signing secret is never readable through the API, and a change keeps the old one valid (two ' +
      'signatures)',
    async () => {
      const key = 'Svc:Webhooks:SigningSecret';
      const url = `${providers(app, 'Svc.Configuration')}/appConfigurations/${key}`;
      await upsert(app, 'Svc.Configuration', 'appConfigurations', key, { key, value: 'whsec-first-0123456789' });
      const reader = 'reader7@example.com';
      const name = randomUUID();
      const granted = await app.call(
        'POST',
        `${app.management}/instances/${INSTANCE}/providers/Svc.Authorization/roleAssignments/${name}`,
        {
          body: {
            name,
            principal_id: oidForUpn(reader),
            principal_type: 'User',
            role_definition_id: roleDefinitionPath(ROLE_IDS.reader),
            scope: `/instances/${INSTANCE}`,
          },
        },
      );
      expect(granted.status).toBe(200);
      for (const as of [undefined, reader]) {
        const read = await app.call('GET', url, as ? { as } : {});
        expect(read.status).toBe(200);
        expect(JSON.stringify(read.body)).not.toContain('whsec-first');
        expect((read.body as { resource: { value: string } }).resource.value).toBe('********');
      }
      await seedAgent(app, 'hooked', { llmUrl: llm.url });
      const hook = await receiver();
      try {
        expect((await startAsync('hooked', hook.url)).status).toBe(202);
        await until('delivery', () => hook.received.length === 1);
        const first = hook.received[0]!;
        expect(first.signature).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
        expect(first.signature).toContain(`v1=${hmac('whsec-first-0123456789', first.signature, first.body)}`);
        await upsert(app, 'Svc.Configuration', 'appConfigurations', key, { key, value: 'whsec-second-0123456789' });
        expect(JSON.stringify((await app.call('GET', url)).body)).not.toMatch(/whsec-(first|second)/);
        expect((await startAsync('hooked', hook.url)).status).toBe(202);
        await until('delivery', () => hook.received.length === 2);
        const second = hook.received[1]!;
        const t = /t=(\d+)/.exec(second.signature)?.[1];
        const signedWith = (secret: string) => hmac(secret, second.signature, second.body);
        expect(second.signature).toBe(
          `t=${t},v1=${signedWith('whsec-second-0123456789')},v1=${signedWith('whsec-first-0123456789')}`,
        );
      } finally {
        await hook.close();
      }
    },
  );

  it("8: receivers that hang hold only their own destination's lane: another user's delivery goes first", async () => {
    const hanging = await receiver(true);
    const other = await receiver();
    try {
      await seedAgent(app, 'hooked8', { llmUrl: llm.url });
      for (let i = 0; i < 24; i++) expect((await startAsync('hooked8', hanging.url)).status).toBe(202);
      await until('hanging deliveries', () => hanging.received.length >= 2);
      await grantReader(app, 'someone-else@example.com', 'hooked8');
      expect((await startAsync('hooked8', other.url, 'someone-else@example.com')).status).toBe(202);
      await until('the other delivery', () => other.received.length === 1);
      // Before any hanging attempt reached its deadline (the first of them closed by the service).
      expect(
        hanging.closedAt.length === 0 || (other.received[0]?.at ?? Infinity) <= Math.min(...hanging.closedAt),
      ).toBe(true);
      // Two at a time to the hanging destination, not eight or more.
      expect(hanging.received.length).toBeLessThanOrEqual(2);
    } finally {
      await hanging.close();
      await other.close();
    }
  });

  it('12: a hanging tool server costs a completion at most the listing deadline, and later ones nothing', async () => {
    const requests: string[] = [];
    const hang = http.createServer((req) => requests.push(`${req.method} ${req.url}`));
    await new Promise<void>((resolve) => hang.listen(0, '127.0.0.1', resolve));
    try {
      await seedAgent(app, 'tooled', { llmUrl: llm.url });
      await upsert(app, 'Svc.Agent', 'tools', 'hanging-server', {
        tool_type: 'mcp',
        url: `http://127.0.0.1:${(hang.address() as AddressInfo).port}/mcp`,
        allowed_tools: ['lookup'],
      });
      await updateAgent(app, 'tooled', { tool_object_ids: [objectId('Svc.Agent', 'tools', 'hanging-server')] });
      // Before: each completion waited 60 s for the server (the SDK's request timeout), outside the tool budget.
      expect((await complete(app, 'tooled', 'first')).status).toBe(200);
      const asked = requests.length;
      expect(asked).toBeGreaterThan(0);
      expect((await complete(app, 'tooled', 'second')).status).toBe(200);
      expect(requests.length).toBe(asked);
    } finally {
      hang.closeAllConnections();
      await new Promise<void>((resolve) => hang.close(() => resolve()));
    }
  }, 30_000);

  it("12: a token with a reused UPN (another object id) reads none of the first holder's data", async () => {
    await seedAgent(app, 'upn-agent', { llmUrl: llm.url });
    const upn = 'reused@example.com';
    await grantReader(app, upn, 'upn-agent');
    const as = async (oid: string | undefined, method: string, path: string, body?: unknown) => {
      const res = await fetch(`${app.core}/instances/${INSTANCE}${path}`, {
        method,
        headers: { authorization: `Bearer ${await app.token(upn, oid)}`, 'content-type': 'application/json' },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      return { status: res.status, body: (await res.json().catch(() => undefined)) as unknown };
    };
    const session = await as(undefined, 'POST', '/sessions', { name: 'mine' });
    expect(session.status).toBe(200);
    const id = (session.body as { id: string }).id;
    expect((await as(undefined, 'GET', `/sessions/${id}/messages`)).status).toBe(200);
    const newcomer = randomUUID();
    expect((await as(newcomer, 'GET', `/sessions/${id}/messages`)).status).toBe(404);
    expect((await as(newcomer, 'GET', '/sessions')).body).toEqual([]);
    // The first holder still has it.
    expect(((await as(undefined, 'GET', '/sessions')).body as { id: string }[]).map((x) => x.id)).toContain(id);
  });

  it('12: an attachment whose blob is gone is refused like an unknown one (400 naming it), not a 500', async () => {
    await seedAgent(app, 'attacher', { llmUrl: llm.url });
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(Buffer.from('soon gone'))], { type: 'text/plain' }), 'gone.txt');
    form.append('agent_name', 'attacher');
    const uploaded = await fetch(`${app.core}/instances/${INSTANCE}/files/upload`, {
      method: 'POST',
      body: form,
      headers: { authorization: `Bearer ${await app.token()}` },
    });
    const objectId = ((await uploaded.json()) as { object_id: string }).object_id;
    const fileId = objectId.split('/').pop() ?? '';
    // Deleted out of band, in the storage account itself.
    const files = BlobServiceClient.fromConnectionString(inject('storageConnectionString')).getContainerClient('files');
    let deleted = 0;
    for await (const blob of files.listBlobsFlat())
      if (blob.name.includes(fileId)) deleted += Number((await files.deleteBlob(blob.name)).errorCode === undefined);
    expect(deleted).toBe(1);
    const answer = await complete(app, 'attacher', 'what does it say?', { attachments: [objectId] });
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({
      error: { code: 'ValidationError', details: [{ field: 'attachments', message: 'Attachment gone.txt not found' }] },
    });
  });

  it('12: a Host header that is not a host is neither a 500 nor reflected into the portal settings', async () => {
    const raw = (path: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = net.connect(Number(new URL(app.core).port), '127.0.0.1', () =>
          socket.end(`GET ${path} HTTP/1.1\r\nHost: evil.example/"><script>\r\nConnection: close\r\n\r\n`),
        );
        let answer = '';
        socket.on('data', (d: Buffer) => (answer += d.toString()));
        socket.on('end', () => resolve(answer));
        socket.on('error', reject);
      });
    for (const path of ['/portal/', '/portal/config.json']) {
      const answer = await raw(path);
      expect(answer, path).not.toMatch(/^HTTP\/1\.1 5/);
      expect(answer, path).not.toContain('evil.example');
    }
  });

  it(
    '4, 5, 9, 10: each hostile document fails alone, named, within its deadline; a PDF is read; the service ' +
      'answers throughout',
    async () => {
      files.set('good.pdf', {
        bytes: await pdfOf(
          'Harbour report',
          'Container traffic in the northern harbour doubled after the new cranes arrived.',
        ),
        type: 'application/pdf',
      });
      files.set('deep.html', { bytes: deepHtml(), type: 'text/html' });
      files.set('inline.html', { bytes: unclosedInlineHtml(), type: 'text/html' });
      files.set('pages.pdf', { bytes: await manyPagesPdf(), type: 'application/pdf' });
      files.set('bomb.pdf', { bytes: await compressedStreamBombPdf(), type: 'application/pdf' });
      files.set('bomb.docx', { bytes: await docxBomb(), type: DOCX });
      const names = ['good.pdf', 'deep.html', 'inline.html', 'pages.pdf', 'bomb.pdf', 'bomb.docx', 'drip.html'];
      await seedKnowledgeAgent(app, llm, 'reader');
      await upsert(app, 'Svc.DataSource', 'dataSources', 'hostile', { data_source_type: 'Web', urls: [`${docsUrl}/`] });
      await upsert(app, 'Svc.DataPipeline', 'dataPipelines', 'hostile', {
        data_source_object_id: objectId('Svc.DataSource', 'dataSources', 'hostile'),
        source_paths: names.map((n) => `${docsUrl}/${n}`),
        index_name: 'hostile',
        embedding_ai_model_object_id: objectId('Svc.AIModel', 'aiModels', 'reader-embedding'),
      });
      await upsert(app, 'Svc.Agent', 'tools', 'hostile-tool', { tool_type: 'knowledge', index_name: 'hostile' });
      await updateAgent(app, 'reader', { tool_object_ids: [objectId('Svc.Agent', 'tools', 'hostile-tool')] });
      const started = await app.call('POST', `${providers(app, 'Svc.DataPipeline')}/dataPipelines/hostile/process`);
      expect(started.status).toBe(202);
      const runId = (started.body as { object_id: string }).object_id;

      const latencies: number[] = [];
      let run = await readRun(app, runId);
      for (
        const until = Date.now() + 50_000;
        Date.now() < until && run.status !== 'Completed' && run.status !== 'Failed';
      ) {
        const t = performance.now();
        const status = await fetch(`${app.core}/status`);
        latencies.push(performance.now() - t);
        expect(status.status).toBe(200);
        await new Promise((r) => setTimeout(r, 50));
        if (latencies.length % 10 === 0) run = await readRun(app, runId);
      }
      run = await readRun(app, runId);
      expect(run.status).toBe('Completed');
      expect(run.counts).toMatchObject({ documents: 7, failed_documents: 6, added: 1 });
      const errorOf = (name: string) => run.errors.find((e) => e.source === `${docsUrl}/${name}`)?.message;
      expect(errorOf('deep.html')).toMatch(/nests elements deeper than 512/);
      expect(errorOf('inline.html')).toMatch(/nests elements deeper than 512/);
      expect(errorOf('pages.pdf')).toMatch(/10000 pages/);
      expect(errorOf('bomb.pdf')).toMatch(/took longer than [36] s|needs more than \d+ MiB/);
      expect(errorOf('bomb.docx')).toMatch(/more than 64 MiB uncompressed/);
      expect(errorOf('drip.html')).toMatch(/took longer than 6 s/);
      expect(run.errors.map((e) => e.message).join('\n')).not.toMatch(/\/(work|tmp|home|node_modules)\//);

      const sorted = [...latencies].sort((a, b) => a - b);
      const p99 = sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))] ?? 0;
      const rss = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${app.process.child.pid}/status`, 'utf8'))?.[1];
      console.log(
        `hostile corpus: ${latencies.length} /status samples, p99 ${p99.toFixed(1)} ms, max ` +
          `${sorted.at(-1)?.toFixed(1)} ms; service peak RSS ${Math.round(Number(rss) / 1024)} MiB`,
      );
      const found = await complete(
        app,
        'reader',
        'Container traffic in the northern harbour doubled after the new cranes arrived.',
      );
      expect(found.body.citations[0]?.source).toBe(`${docsUrl}/good.pdf`);
    },
    90_000,
  );
});

describe('stopping, against the bundle', () => {
  it('12: on SIGTERM a request running past the grace gets 503 with Retry-After, not a reset connection', async () => {
    const llm = await startMockLlm();
    const app = await startBundledApp();
    try {
      await seedAgent(app, 'slow', { llmUrl: llm.url });
      // Longer than the 5 s shutdown grace.
      llm.next({ hangMs: 8000 });
      const pending = fetch(`${app.core}/instances/${INSTANCE}/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${await app.token()}`, 'content-type': 'application/json' },
        body: JSON.stringify({ user_prompt: 'take your time', agent_name: 'slow' }),
      });
      await new Promise((r) => setTimeout(r, 500));
      app.process.child.kill('SIGTERM');
      const answer = await pending;
      expect(answer.status).toBe(503);
      expect(answer.headers.get('retry-after')).toBe('1');
      expect(await answer.json()).toMatchObject({ error: { code: 'ServiceUnavailable' } });
    } finally {
      await app.stop();
      await llm.close();
    }
  }, 30_000);
});

describe('network reach of model endpoints, against the bundle without ALLOW_PRIVATE_NETWORK', () => {
  it(
    '12: only an Owner may point a model endpoint at a loopback address; a Contributor cannot probe ports ' +
      'through completions',
    async () => {
      const llm = await startMockLlm();
      const app = await startBundledApp();
      try {
        const contributor = 'contributor12@example.com';
        const name = randomUUID();
        const granted = await app.call(
          'POST',
          `${app.management}/instances/${INSTANCE}/providers/Svc.Authorization/roleAssignments/${name}`,
          {
            body: {
              name,
              principal_id: oidForUpn(contributor),
              principal_type: 'User',
              role_definition_id: roleDefinitionPath(ROLE_IDS.contributor),
              scope: `/instances/${INSTANCE}`,
            },
          },
        );
        expect(granted.status).toBe(200);
        const endpoint = (url: string, as?: string) =>
          app.call('POST', `${providers(app, 'Svc.Configuration')}/apiEndpointConfigurations/probe`, {
            body: { name: 'probe', category: 'LLM', provider: 'openai', url, authentication_type: 'None' },
            ...(as ? { as } : {}),
          });
        for (const url of [
          `${llm.url}/v1`,
          'http://127.0.0.1:1/v1',
          'http://10.0.0.5/v1',
          'http://localhost:8080/v1',
        ]) {
          const refused = await endpoint(url, contributor);
          expect(refused.status, url).toBe(400);
          expect(JSON.stringify(refused.body), url).toContain('only an Owner');
        }
        // The Owner may (local model servers), and the endpoint works.
        expect((await endpoint(`${llm.url}/v1`)).status).toBe(200);
        const shown = await app.call('GET', `${providers(app, 'Svc.Configuration')}/apiEndpointConfigurations/probe`);
        expect((shown.body as { resource: { private_network: boolean } }).resource.private_network).toBe(true);
      } finally {
        await app.stop();
        await llm.close();
      }
    },
    60_000,
  );
});
