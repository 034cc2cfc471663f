// The relay's socket to an Azure OpenAI realtime deployment with a managed identity, over real TLS: a
// stand-in answering for *.openai.azure.com through a test resolver gets a Cognitive Services token and
// nothing else; a host outside that audience gets no token and is never reached.
import { readFileSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { AccessToken } from '@azure/core-auth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import type { EndpointView } from '../../../../shared/models/endpoint.js';
import { ModelCredentials } from '../../../../shared/models/credentials.js';
import { CredentialGate } from '../../../../shared/net/credential-gate.js';
import type { AiModelDoc } from '../../../../shared/providers/types/catalog.js';
import { openModelSocket } from '../../../../shared/realtime/model-socket.js';
import { testConfig } from '../../../support/services.js';

const tls = (file: string) => readFileSync(path.join(import.meta.dirname, '../../../support/tls', file));
const toLoopback = (
  _host: string,
  _options: unknown,
  callback: (e: null, a: { address: string; family: number }[]) => void,
) => callback(null, [{ address: '127.0.0.1', family: 4 }]);

describe("the relay's socket to a model with a managed identity", () => {
  let server: https.Server;
  let port: number;
  const seen: { url: string | undefined; authorization: string | undefined }[] = [];
  const asked: string[] = [];
  const identity = {
    getToken(scopes: string | string[]): Promise<AccessToken> {
      const list = Array.isArray(scopes) ? scopes : [scopes];
      asked.push(...list);
      return Promise.resolve({ token: `token-for:${list.join(',')}`, expiresOnTimestamp: Date.now() + 3_600_000 });
    },
  };
  const config = testConfig({ ALLOW_PRIVATE_NETWORK: 'true' });
  const s = {
    config,
    credentials: new ModelCredentials(
      config,
      new CredentialGate({ serviceAudience: config.auth.audience, serviceHosts: [], clientId: undefined, identity }),
    ),
  };
  const call = (url: string) => ({
    endpoint: {
      objectId: 'e',
      version: '1',
      provider: 'azure-openai',
      url,
      apiVersion: '2024-10-01-preview',
      authenticationType: 'AzureIdentity',
      secretName: undefined,
      scope: undefined,
      timeoutMs: 5000,
      maxConnections: 8,
      privateNetwork: true,
    } satisfies EndpointView,
    model: { deployment_name: 'gpt-4o-realtime' } as AiModelDoc,
  });

  beforeAll(async () => {
    server = https.createServer({ key: tls('key.pem'), cert: tls('cert.pem') });
    const wss = new WebSocketServer({ server });
    wss.on('connection', (socket, req) => {
      seen.push({ url: req.url, authorization: req.headers.authorization });
      socket.close(1000);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('connects to the deployment with a Cognitive Services token', async () => {
    const socket = await openModelSocket(s, call(`https://voice.openai.azure.com:${port}`), {
      resolve: toLoopback,
      ca: tls('cert.pem'),
    });
    await new Promise((resolve, reject) => socket.once('close', resolve).once('error', reject));
    expect(seen).toEqual([
      {
        url: '/openai/realtime?api-version=2024-10-01-preview&deployment=gpt-4o-realtime',
        authorization: 'Bearer token-for:https://cognitiveservices.azure.com/.default',
      },
    ]);
    expect(asked).toEqual(['https://cognitiveservices.azure.com/.default']);
  });

  it('sends no token to a host outside that audience, and never reaches it', async () => {
    seen.length = 0;
    await expect(
      openModelSocket(s, call(`https://voice.attacker.example:${port}`), { resolve: toLoopback, ca: tls('cert.pem') }),
    ).rejects.toThrow(/cannot be sent there/);
    await expect(
      openModelSocket(s, call(`http://voice.openai.azure.com:${port}`), { resolve: toLoopback }),
    ).rejects.toThrow(/cannot be sent there/);
    expect(seen).toEqual([]);
  });
});
