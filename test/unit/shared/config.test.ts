import { describe, expect, it } from 'vitest';
import { ConfigError, DEFAULT_INSTANCE_ID, loadConfig } from '../../../shared/config.js';

describe('loadConfig', () => {
  it('gives the contract defaults with an empty environment', () => {
    const c = loadConfig({});
    expect(c.instanceId).toBe(DEFAULT_INSTANCE_ID);
    expect([c.host, c.corePort, c.managementPort]).toEqual(['127.0.0.1', 7071, 7072]);
    expect(c.store.kind).toBe('embedded');
    expect(c.auth).toMatchObject({ kind: 'local', issuer: 'http://127.0.0.1:7071/local-idp', audience: 'api://agent-platform' });
    expect(c.storage).toEqual({ kind: 'connection-string', connectionString: 'UseDevelopmentStorage=true' });
  });

  it('reads a blank setting as one not set, and ignores what is not a setting', () => {
    const c = loadConfig({ INSTANCE_ID: '', CORE_PORT: '  ', STORE: ' ', LOG_LEVEL: '', UNRELATED: 'x' });
    expect([c.instanceId, c.corePort, c.store.kind, c.logLevel]).toEqual([DEFAULT_INSTANCE_ID, 7071, 'embedded', 'info']);
  });

  it('names the setting that is malformed', () => {
    expect(() => loadConfig({ INSTANCE_ID: 'not-a-guid' })).toThrow(/INSTANCE_ID/);
    expect(() => loadConfig({ CORE_PORT: 'http' })).toThrow(/CORE_PORT/);
    expect(() => loadConfig({ STORE: 'mongo' })).toThrow(/STORE/);
  });

  it('requires COSMOS_ENDPOINT for the cosmos store', () => {
    expect(() => loadConfig({ STORE: 'cosmos' })).toThrow(ConfigError);
    expect(() => loadConfig({ STORE: 'cosmos' })).toThrow(/COSMOS_ENDPOINT/);
  });

  it('refuses a partial identity-provider configuration, naming what is missing', () => {
    expect(() => loadConfig({ AUTH_ISSUER: 'https://login.example/t/v2.0' })).toThrow(/AUTH_AUDIENCE, AUTH_JWKS_URI/);
  });

  it('uses the configured identity provider when all three settings are given', () => {
    const c = loadConfig({ AUTH_ISSUER: 'https://idp.example', AUTH_AUDIENCE: 'api://x', AUTH_JWKS_URI: 'https://idp.example/keys' });
    expect(c.auth).toEqual({ kind: 'jwks', issuer: 'https://idp.example', audience: 'api://x', jwksUri: 'https://idp.example/keys' });
  });

  it('reads lists and the API selection', () => {
    const c = loadConfig({ BOOTSTRAP_OWNER_IDS: 'a, b,,c', SERVICE_APIS: 'management' });
    expect(c.bootstrapOwnerIds).toEqual(['a', 'b', 'c']);
    expect(c.serviceApis).toEqual(['management']);
    expect(() => loadConfig({ SERVICE_APIS: 'core,admin' })).toThrow(/SERVICE_APIS/);
  });
});
