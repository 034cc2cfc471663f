// What configuration may make the service do: which secrets it may send, where it may connect, which
// tokens it may mint, and what a portal may be told to render.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelCredentials } from '../../../shared/models/credentials.js';
import { endpointView } from '../../../shared/models/endpoint.js';
import { ModelGateway } from '../../../shared/models/gateway.js';
import { guardedAgent } from '../../../shared/net/outbound.js';
import type { AnyResource } from '../../../shared/providers/types/resource-type.js';
import { apiEndpointConfigurations } from '../../../shared/providers/types/catalog.js';
import { startMockLlm, type MockLlm } from '../../../scripts/mock-llm.js';
import { seedAgent } from '../../support/agents.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { INSTANCE } from '../../support/services.js';
import { resourcesOf } from '../../../shared/providers/types/resource-type.js';

describe('what configuration may make the service do', () => {
  let app: TestApp;
  let llm: MockLlm;
  const endpoint = (name: string, body: Record<string, unknown>) =>
    app.call(
      'POST',
      `${app.management}/instances/${INSTANCE}/providers/Svc.Configuration/apiEndpointConfigurations/${name}`,
      { body: { name, provider: 'openai', authentication_type: 'None', ...body } },
    );
  const config = (key: string, value: string) =>
    app.call('POST', `${app.management}/instances/${INSTANCE}/providers/Svc.Configuration/appConfigurations/${key}`, {
      body: { name: key, key, value },
    });

  beforeAll(async () => {
    llm = await startMockLlm();
    app = await startTestApp();
  });
  afterAll(async () => {
    await app.close();
    await llm.close();
  });

  it("refuses secret names outside SVC_SECRET_: no endpoint can send the service's own settings anywhere", async () => {
    for (const name of [
      'AzureWebJobsStorage',
      'COSMOS_KEY',
      'APPLICATIONINSIGHTS_CONNECTION_STRING',
      'PATH',
      'svc_secret_lower',
      'SVC_SECRET_',
    ]) {
      const r = await endpoint('leaky', {
        url: `${llm.url}/v1`,
        authentication_type: 'APIKey',
        authentication_parameters: { api_key_secret_name: name },
      });
      expect(r.status, name).toBe(400);
      expect(JSON.stringify(r.body)).toContain('SVC_SECRET_');
    }
  });

  it('sends an SVC_SECRET_ secret as the API key, and never one stored under another name', async () => {
    process.env.SVC_SECRET_TEST_MODEL_KEY = 'sk-test-value';
    await seedAgent(app, 'keyed', { llmUrl: llm.url });
    expect(
      (
        await endpoint('keyed-endpoint', {
          url: `${llm.url}/v1`,
          authentication_type: 'APIKey',
          authentication_parameters: { api_key_secret_name: 'SVC_SECRET_TEST_MODEL_KEY' },
        })
      ).status,
    ).toBe(200);
    const r = await app.call('POST', `${app.core}/instances/${INSTANCE}/completions`, {
      body: { user_prompt: 'key?', agent_name: 'keyed' },
    });
    expect(r.status).toBe(200);
    expect(llm.requests.at(-1)?.headers.authorization).toBe('Bearer sk-test-value');

    // An endpoint written before the rule (straight into the store) naming the storage connection string.
    const stored = await app.services.resourceCache.get(
      `/instances/${INSTANCE}/providers/Svc.Configuration/apiEndpointConfigurations/keyed-endpoint`,
      apiEndpointConfigurations,
    );
    if (!stored) throw new Error('the endpoint was not saved');
    await resourcesOf(app.services.store, apiEndpointConfigurations).upsert({
      ...stored,
      authentication_parameters: { api_key_secret_name: 'AzureWebJobsStorage' },
      updated_on: new Date().toISOString(),
    });
    app.services.resourceCache.invalidate(stored.object_id);
    const before = llm.requests.length;
    const refused = await app.call('POST', `${app.core}/instances/${INSTANCE}/completions`, {
      body: { user_prompt: 'key?', agent_name: 'keyed' },
    });
    expect(refused.status).toBe(400);
    expect(llm.requests.length).toBe(before);
  });

  it(
    'accepts only http(s) model endpoints without credentials, never link-local or platform addresses in any ' +
      'spelling',
    async () => {
      const refused = [
        'file:///etc/passwd',
        'data:text/plain,hello',
        'gopher://127.0.0.1:6379/_INFO',
        'javascript:alert(1)',
        'ftp://example.com/',
        'http://user:secret@example.com/v1',
        'http://169.254.169.254/metadata',
        'http://2852039166/',
        'http://0xa9.0xfe.0xa9.0xfe/',
        'http://0251.0376.0251.0376/',
        'http://169.254.43518/',
        'http://[::ffff:169.254.169.254]/',
        'http://[::ffff:a9fe:a9fe]/',
        'http://[64:ff9b::a9fe:a9fe]/',
        'http://[fe80::1]/',
        'http://168.63.129.16/',
        'http://[::ffff:168.63.129.16]/',
        'http://2822734096/',
      ];
      for (const url of refused) expect((await endpoint('bad', { url })).status, url).toBe(400);
      for (const url of [
        'http://127.0.0.1:8080/v1',
        'http://localhost:11434/v1',
        'http://[::1]:8080/v1',
        'http://10.1.2.3/v1',
        'https://my.openai.azure.com/',
      ]) {
        expect((await endpoint('good', { url })).status, url).toBe(200);
      }
    },
  );

  it(
    'mints managed-identity tokens only for allowed scopes, and Cognitive Services tokens only for Azure AI ' + 'hosts',
    async () => {
      const identity = (url: string, scope?: string) =>
        endpoint('mi', {
          url,
          authentication_type: 'AzureIdentity',
          ...(scope ? { authentication_parameters: { scope } } : {}),
        });
      expect((await identity('https://my.openai.azure.com/', 'https://management.azure.com/.default')).status).toBe(
        400,
      );
      expect((await identity('https://my.openai.azure.com/', 'https://vault.azure.net/.default')).status).toBe(400);
      expect((await identity('https://attacker.example.com/v1')).status).toBe(400);
      expect((await identity('http://my.openai.azure.com/')).status).toBe(400);
      expect((await identity('https://my.openai.azure.com/')).status).toBe(200);
      expect(
        (await identity('https://my.cognitiveservices.azure.com/', 'https://cognitiveservices.azure.com/.default'))
          .status,
      ).toBe(200);
    },
  );

  it('refuses a destination the rules forbid without connecting, with the same answer as a closed port', async () => {
    // A listener on loopback that a user-URL rule set may not reach: refused before any connection.
    let connections = 0;
    const server = http.createServer((_req, res) => res.end('{}'));
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    try {
      // An endpoint not saved for private networks connects under the public rules, whatever the other pool allows.
      const gateway = new ModelGateway({
        maxRetries: 0,
        maxResponseBytes: 1024,
        credentials: new ModelCredentials(app.services.config, app.services.gate),
        dispatcher: guardedAgent({ policy: 'model', allowPrivateNetwork: true }),
        publicDispatcher: guardedAgent({ policy: 'user', allowPrivateNetwork: false }),
      });
      const view = (url: string) =>
        endpointView({
          object_id: 'x',
          updated_on: 'v',
          provider: 'openai',
          url,
          authentication_type: 'None',
          timeout_seconds: 5,
        } as unknown as AnyResource)!;
      const open = await gateway
        .complete({
          endpoint: view(`http://localhost:${port}/v1`),
          deployment: 'd',
          messages: [{ role: 'user', content: 'x' }],
          parameters: {},
        })
        .catch((e: unknown) => e);
      server.close();
      const closed = await gateway
        .complete({
          endpoint: view(`http://localhost:${port}/v1`),
          deployment: 'd',
          messages: [{ role: 'user', content: 'x' }],
          parameters: {},
        })
        .catch((e: unknown) => e);
      expect(connections).toBe(0);
      expect(open).toMatchObject({
        kind: 'upstream-failed',
        code: 'UpstreamUnavailable',
        message: 'The model endpoint could not be reached',
      });
      expect(closed).toMatchObject({
        kind: 'upstream-failed',
        code: 'UpstreamUnavailable',
        message: 'The model endpoint could not be reached',
      });
    } finally {
      server.close();
    }
  });

  it('accepts branding a portal can render safely: https or relative logo URLs, CSS colours', async () => {
    for (const bad of [
      'javascript:alert(1)',
      'http://example.com/logo.png',
      '//evil.example/logo.png',
      'data:image/svg+xml,<svg/>',
      'https://u:p@example.com/x.png',
      'logo.png',
    ]) {
      expect((await config('Svc:Branding:LogoUrl', bad)).status, bad).toBe(400);
    }
    for (const bad of [
      'red;background:url(x)',
      'url(javascript:alert(1))',
      'expression(alert(1))',
      '#12345',
      '</style><script>',
    ]) {
      expect((await config('Svc:Branding:PrimaryColor', bad)).status, bad).toBe(400);
    }
    expect((await config('Svc:Branding:LogoUrl', 'https://cdn.example.com/logo.png')).status).toBe(200);
    expect((await config('Svc:Branding:PrimaryColor', 'rgb(15 108 189)')).status).toBe(200);
    expect((await config('Svc:Branding:PrimaryTextColor', 'white')).status).toBe(200);
    const branding = await app.call('GET', `${app.core}/instances/${INSTANCE}/branding`);
    expect(branding.body).toMatchObject({
      logo_url: 'https://cdn.example.com/logo.png',
      primary_color: 'rgb(15 108 189)',
      primary_text_color: 'white',
    });
    expect((await config('Svc:Branding:LogoUrl', '/static/logo.svg')).status).toBe(200);
  });
});
