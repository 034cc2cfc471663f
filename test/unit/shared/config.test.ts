import { describe, expect, it } from 'vitest';
import { DEFAULT_INSTANCE_ID } from '../../../shared/config-settings.js';
import { ConfigError, loadConfig } from '../../../shared/config.js';

describe('loadConfig', () => {
  it('gives the contract defaults with an empty environment', () => {
    const c = loadConfig({});
    expect(c.instanceId).toBe(DEFAULT_INSTANCE_ID);
    expect([c.host, c.corePort, c.managementPort]).toEqual(['127.0.0.1', 7071, 7072]);
    expect(c.store.kind).toBe('embedded');
    expect(c.auth).toMatchObject({
      kind: 'local',
      issuer: 'http://127.0.0.1:7071/local-idp',
      audience: 'api://agent-platform',
    });
    expect(c.storage).toEqual({ kind: 'connection-string', connectionString: 'UseDevelopmentStorage=true' });
  });

  it('reads a blank setting as one not set, and ignores what is not a setting', () => {
    const c = loadConfig({ INSTANCE_ID: '', CORE_PORT: '  ', STORE: ' ', LOG_LEVEL: '', UNRELATED: 'x' });
    expect([c.instanceId, c.corePort, c.store.kind, c.logLevel]).toEqual([
      DEFAULT_INSTANCE_ID,
      7071,
      'embedded',
      'info',
    ]);
  });

  it('names the setting that is malformed', () => {
    expect(() => loadConfig({ INSTANCE_ID: 'not-a-guid' })).toThrow(/INSTANCE_ID/);
    expect(() => loadConfig({ CORE_PORT: 'http' })).toThrow(/CORE_PORT/);
    expect(() => loadConfig({ STORE: 'mongo' })).toThrow(/STORE/);
  });

  it('checks each value by its rule, and says what is wrong with it', () => {
    const problem = (env: Record<string, string>) => {
      try {
        loadConfig(env);
        return undefined;
      } catch (e) {
        return e instanceof ConfigError ? e.message : 'not a ConfigError';
      }
    };
    expect(problem({ PLUGIN_TIMEOUT_SECONDS: '0' })).toBe(
      'Invalid setting PLUGIN_TIMEOUT_SECONDS: must be a whole number from 1 to 600',
    );
    expect(problem({ PLUGIN_TIMEOUT_SECONDS: '601' })).toMatch(/PLUGIN_TIMEOUT_SECONDS/);
    expect(problem({ MAX_UPLOAD_BYTES: '1.5' })).toBe(
      'Invalid setting MAX_UPLOAD_BYTES: must be a whole number of at least 1',
    );
    expect(problem({ GRAPH_ENABLED: 'yes' })).toBe('Invalid setting GRAPH_ENABLED: must be true, false, 1 or 0');
    expect(problem({ LOG_LEVEL: 'loud' })).toMatch(/^Invalid setting LOG_LEVEL: must be one of debug, info/);
    expect(problem({ ASYNC_COMPLETIONS_QUEUE: 'two--hyphens' })).toMatch(
      /ASYNC_COMPLETIONS_QUEUE: must be a Storage queue name/,
    );
    expect(problem({ AUTH_JWKS_URI: 'not a url' })).toMatch(/AUTH_JWKS_URI: must be a URL/);
    expect(problem({ REALTIME_RELAY_URL: 'https://relay.example' })).toBe(
      'Invalid setting REALTIME_RELAY_URL: must be a ws:// or wss:// URL',
    );
    expect(problem({ PORTAL_ENTRA_AUTHORITY: 'http://login.example/tenant' })).toMatch(
      /PORTAL_ENTRA_AUTHORITY: must be a URL \(https\)/,
    );
    expect(problem({ CORS_ALLOWED_ORIGINS: 'https://app.example, https://other.example/path' })).toMatch(
      /CORS_ALLOWED_ORIGINS: each entry must be an origin/,
    );
    expect(problem({ OTEL_SERVICE_NAME: 'x'.repeat(201) })).toMatch(/OTEL_SERVICE_NAME: must be 1 to 200 characters/);

    const c = loadConfig({
      PLUGIN_TIMEOUT_SECONDS: '600',
      GRAPH_ENABLED: '1',
      QUEUE_WORKERS: 'false',
      CORS_ALLOWED_ORIGINS: 'https://app.example, http://localhost:5173,',
      OTEL_EXPORTER_OTLP_ENDPOINT: ' http://collector:4318 ',
      SERVICE_TOKEN_HOSTS: 'Tools.Example, .svc.example',
    });
    expect(c.plugins.timeoutMs).toBe(600_000);
    expect(c.graphUrl).toBe('https://graph.microsoft.com');
    expect(c.queueWorkers).toBe(false);
    expect(c.portal.corsOrigins).toEqual(['https://app.example', 'http://localhost:5173']);
    expect(c.otlp).toEqual({
      endpoint: 'http://collector:4318',
      metricIntervalMs: 60_000,
      serviceName: 'agent-platform',
    });
    expect(c.serviceTokenHosts).toEqual(['tools.example', '.svc.example']);
  });

  it('requires COSMOS_ENDPOINT for the cosmos store', () => {
    expect(() => loadConfig({ STORE: 'cosmos' })).toThrow(ConfigError);
    expect(() => loadConfig({ STORE: 'cosmos' })).toThrow(/COSMOS_ENDPOINT/);
  });

  it('refuses a partial identity-provider configuration, naming what is missing', () => {
    expect(() => loadConfig({ AUTH_ISSUER: 'https://login.example/t/v2.0' })).toThrow(/AUTH_AUDIENCE, AUTH_JWKS_URI/);
  });

  it('uses the configured identity provider when all three settings are given', () => {
    const c = loadConfig({
      AUTH_ISSUER: 'https://idp.example',
      AUTH_AUDIENCE: 'api://x',
      AUTH_JWKS_URI: 'https://idp.example/keys',
    });
    expect(c.auth).toEqual({
      kind: 'jwks',
      issuer: 'https://idp.example',
      audience: 'api://x',
      jwksUri: 'https://idp.example/keys',
    });
  });

  it('reads lists and the API selection', () => {
    const c = loadConfig({ BOOTSTRAP_OWNER_IDS: 'a, b,,c', SERVICE_APIS: 'management' });
    expect(c.bootstrapOwnerIds).toEqual(['a', 'b', 'c']);
    expect(c.serviceApis).toEqual(['management']);
    expect(() => loadConfig({ SERVICE_APIS: 'core,admin' })).toThrow(/SERVICE_APIS/);
  });
});
