// The credential gate with the real storage SDK over real TLS: a stand-in of a storage account (a loopback
// server answering for *.blob.core.windows.net through a test resolver) that challenges for another
// resource gets no token but the Storage one; one whose name resolves inside is never reached; a URL that is
// not a host of the audience gets no token at all.
import { readFileSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { AccessToken } from '@azure/core-auth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CredentialGate, CredentialGateError, STORAGE_SCOPE } from '../../../../shared/net/credential-gate.js';
import { ModelCredentials } from '../../../../shared/models/credentials.js';
import { guardedLookup, type OutboundRules } from '../../../../shared/net/outbound.js';
import { userBlobService } from '../../../../shared/store/storage.js';
import { testConfig } from '../../../support/services.js';

const tls = (file: string) => readFileSync(path.join(import.meta.dirname, '../../../support/tls', file));

/** An identity that records the scopes it is asked for and answers a token naming them. */
function recordingIdentity() {
  const asked: string[][] = [];
  return {
    asked,
    getToken(scopes: string | string[]): Promise<AccessToken> {
      const list = Array.isArray(scopes) ? scopes : [scopes];
      asked.push(list);
      return Promise.resolve({ token: `token-for:${list.join(',')}`, expiresOnTimestamp: Date.now() + 3_600_000 });
    },
  };
}

const gateWith = (identity: ReturnType<typeof recordingIdentity>, serviceHosts: string[] = []) =>
  new CredentialGate({ serviceAudience: 'api://agent-platform', serviceHosts, clientId: undefined, identity });

/** Every name resolves to loopback, as a hostile DNS answer (or a private endpoint) would make it. */
const toLoopback = (
  _host: string,
  _options: unknown,
  callback: (e: null, a: { address: string; family: number }[]) => void,
) => callback(null, [{ address: '127.0.0.1', family: 4 }]);

describe('a storage account URL a user names', () => {
  let server: https.Server;
  let port: number;
  const seen: (string | undefined)[] = [];

  beforeAll(async () => {
    server = https.createServer({ key: tls('key.pem'), cert: tls('cert.pem') }, (req, res) => {
      seen.push(req.headers.authorization);
      // The challenge names Key Vault: the SDK's challenge policy would ask for a token of that resource.
      res.writeHead(401, {
        'www-authenticate':
          'Bearer ' +
          'authorization_uri=https://login.microsoftonline.com/00000000-0000-0000-0000-000000000001/oauth2/authorize ' +
          'resource_id=https://vault.azure.net',
      });
      res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const client = (identity: ReturnType<typeof recordingIdentity>, rules: OutboundRules) => {
    const agent = new https.Agent({ lookup: guardedLookup(rules, toLoopback), ca: tls('cert.pem') });
    return userBlobService(`https://attacker.blob.core.windows.net:${port}`, gateWith(identity), agent, {
      retryOptions: { maxTries: 1 },
    });
  };

  it('gets only a Storage token: a challenge naming Key Vault mints nothing else; the call fails at once', async () => {
    seen.length = 0;
    const identity = recordingIdentity();
    const listing = (await client(identity, { policy: 'user', allowPrivateNetwork: true }))
      .getContainerClient('docs')
      .listBlobsFlat()
      .next();
    await expect(listing).rejects.toThrow();
    expect(identity.asked.flat().every((s) => s === STORAGE_SCOPE)).toBe(true);
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.every((h) => h === `Bearer token-for:${STORAGE_SCOPE}`)).toBe(true);
  });

  it('is never reached when its name resolves to a loopback or private address', async () => {
    seen.length = 0;
    const identity = recordingIdentity();
    const listing = (await client(identity, { policy: 'user', allowPrivateNetwork: false }))
      .getContainerClient('docs')
      .listBlobsFlat()
      .next();
    await expect(listing).rejects.toThrow(/not an allowed destination/);
    expect(seen).toEqual([]);
  });

  it('must be an https Azure Storage host to get a client at all', () => {
    const gate = gateWith(recordingIdentity());
    for (const url of [
      `https://127.0.0.1:${port}`,
      'https://attacker.example.com',
      'http://acct.blob.core.windows.net',
      'https://blob.core.windows.net.attacker.example',
      'https://user:pw@acct.blob.core.windows.net',
    ]) {
      expect(() => gate.credentialFor('storage', url), url).toThrow(CredentialGateError);
    }
    expect(gate.urlProblem('storage', 'https://acct.blob.core.windows.net')).toBeUndefined();
  });
});

describe('managed-identity tokens for model endpoints and tool servers', () => {
  const config = testConfig({
    AUTH_AUDIENCE: 'api://agent-platform',
    AUTH_ISSUER: 'https://issuer.example',
    AUTH_JWKS_URI: 'https://issuer.example/keys',
  });
  const own = 'api://agent-platform/.default';

  it('sends a Cognitive Services token only over https to Azure AI hosts', async () => {
    const identity = recordingIdentity();
    const credentials = new ModelCredentials(config, gateWith(identity));
    for (const url of [
      'http://127.0.0.1:9/mcp',
      'https://attacker.example.com/mcp',
      'http://acct.openai.azure.com/mcp',
    ]) {
      await expect(credentials.bearer(url, undefined), url).rejects.toThrow(/cannot be sent there/);
    }
    await expect(credentials.bearer('https://acct.openai.azure.com/mcp', undefined)).resolves.toBe(
      'token-for:https://cognitiveservices.azure.com/.default',
    );
    expect(identity.asked).toEqual([['https://cognitiveservices.azure.com/.default']]);
  });

  it("sends the service's own audience only to SERVICE_TOKEN_HOSTS, and no other scope anywhere", async () => {
    const identity = recordingIdentity();
    const none = new ModelCredentials(config, gateWith(identity));
    await expect(none.bearer('https://tools.example.com/mcp', own)).rejects.toThrow(/SERVICE_TOKEN_HOSTS/);
    const some = new ModelCredentials(config, gateWith(identity, ['tools.example.com', '.tools.contoso.com']));
    await expect(some.bearer('https://tools.example.com/mcp', own)).resolves.toBe(`token-for:${own}`);
    await expect(some.bearer('https://a.tools.contoso.com/mcp', own)).resolves.toBe(`token-for:${own}`);
    await expect(some.bearer('https://tools.contoso.com.evil.example/mcp', own)).rejects.toThrow();
    await expect(some.bearer('https://acct.openai.azure.com', 'https://management.azure.com/.default')).rejects.toThrow(
      /scope must be one of/,
    );
    expect(identity.asked.flat().every((s) => s === own)).toBe(true);
  });
});

describe('the audiences of the service itself', () => {
  it(
    'mints Monitor tokens for an ingestion endpoint, Cosmos tokens for the account, Graph tokens for Graph, and ' +
      'nothing for another host',
    async () => {
      const identity = recordingIdentity();
      const gate = gateWith(identity);
      await gate
        .credentialFor('monitor', 'https://westeurope-5.in.applicationinsights.azure.com/')
        .getToken('https://vault.azure.net/.default');
      await gate
        .credentialFor('cosmos', 'https://acct.documents.azure.com:443/')
        .getToken('https://management.azure.com/.default');
      await expect(gate.bearer('graph', 'https://graph.microsoft.com')).resolves.toBe(
        'token-for:https://graph.microsoft.com/.default',
      );
      expect(identity.asked).toEqual([
        ['https://monitor.azure.com//.default'],
        ['https://acct.documents.azure.com/.default'],
        ['https://graph.microsoft.com/.default'],
      ]);
      expect(() => gate.credentialFor('monitor', 'https://collector.attacker.example/')).toThrow(CredentialGateError);
      expect(() => gate.credentialFor('cosmos', 'https://cosmos.attacker.example/')).toThrow(CredentialGateError);
      await expect(gate.bearer('graph', 'https://graph.attacker.example')).rejects.toThrow(CredentialGateError);
    },
  );
});
