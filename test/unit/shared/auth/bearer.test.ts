// Bearer tokens against a real JWKS endpoint served over HTTP, and against the local identity provider.
import { createPublicKey } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, exportSPKI, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROUTES } from '../../../../functions/groups.js';
import { call } from '../../../support/requests.js';
import { INSTANCE, testServices, type TestServices } from '../../../support/services.js';

const ISSUER = 'https://idp.test/tenant/v2.0';
const AUDIENCE = 'api://agent-platform-test';
const branding = `/instances/${INSTANCE}/branding`;
const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');

describe('bearer authentication against a remote JWKS', () => {
  let server: http.Server;
  let s: TestServices;
  let rsa: { privateKey: CryptoKey; publicKey: CryptoKey };
  let ec: { privateKey: CryptoKey; publicKey: CryptoKey };
  let jwksRequests = 0;

  const sign = (
    key: CryptoKey,
    alg: string,
    kid: string,
    claims: Record<string, unknown> = {},
    opts: { exp?: string | number; aud?: string } = {},
  ) =>
    new SignJWT({ oid: 'u-1', upn: 'bob@example.com', name: 'Bob', groups: ['g-1'], ...claims })
      .setProtectedHeader({ alg, kid })
      .setIssuer(ISSUER)
      .setAudience(opts.aud ?? AUDIENCE)
      .setIssuedAt()
      .setExpirationTime(opts.exp ?? '1h')
      .sign(key);

  const status = async (authorization?: string) =>
    (await call(ROUTES, s, { path: branding, headers: authorization ? { authorization } : {} })).status;

  beforeAll(async () => {
    rsa = await generateKeyPair('RS256', { extractable: true });
    ec = await generateKeyPair('ES256', { extractable: true });
    const keys: JWK[] = [
      { ...(await exportJWK(rsa.publicKey)), kid: 'rsa', alg: 'RS256', use: 'sig' },
      { ...(await exportJWK(ec.publicKey)), kid: 'ec', alg: 'ES256', use: 'sig' },
    ];
    server = http.createServer((_req, res) => {
      jwksRequests++;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    s = await testServices({
      env: { AUTH_ISSUER: ISSUER, AUTH_AUDIENCE: AUDIENCE, AUTH_JWKS_URI: `http://127.0.0.1:${port}/keys` },
    });
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('accepts RS256 and ES256 tokens from the configured issuer, fetching the JWKS', async () => {
    expect(await status(`Bearer ${await sign(rsa.privateKey, 'RS256', 'rsa')}`)).toBe(200);
    expect(await status(`Bearer ${await sign(ec.privateKey, 'ES256', 'ec')}`)).toBe(200);
    expect(jwksRequests).toBeGreaterThan(0);
  });

  it('maps claims to the principal (oid, upn, name, groups)', async () => {
    const principal = await s.bearer.verify(await sign(rsa.privateKey, 'RS256', 'rsa'));
    expect(principal).toMatchObject({ kind: 'user', id: 'u-1', upn: 'bob@example.com', name: 'Bob', groups: ['g-1'] });
    const fallback = await s.bearer.verify(
      await sign(rsa.privateKey, 'RS256', 'rsa', {
        oid: undefined,
        upn: undefined,
        sub: 's-1',
        preferred_username: 'p@example.com',
      }),
    );
    expect(fallback).toMatchObject({ id: 's-1', upn: 'p@example.com' });
  });

  it('rejects a missing token', async () => {
    expect(await status()).toBe(401);
    expect(await status('Basic dXNlcjpwYXNz')).toBe(401);
  });

  it('rejects an expired token beyond the 60 s tolerance, and accepts one within it', async () => {
    const now = Math.floor(Date.now() / 1000);
    expect(await status(`Bearer ${await sign(rsa.privateKey, 'RS256', 'rsa', {}, { exp: now - 120 })}`)).toBe(401);
    expect(await status(`Bearer ${await sign(rsa.privateKey, 'RS256', 'rsa', {}, { exp: now - 30 })}`)).toBe(200);
  });

  it('rejects a token for another audience or from another issuer', async () => {
    expect(await status(`Bearer ${await sign(rsa.privateKey, 'RS256', 'rsa', {}, { aud: 'api://other' })}`)).toBe(401);
    const foreign = await new SignJWT({ oid: 'u', upn: 'x@y' })
      .setProtectedHeader({ alg: 'RS256', kid: 'rsa' })
      .setIssuer('https://evil.test')
      .setAudience(AUDIENCE)
      .setExpirationTime('1h')
      .sign(rsa.privateKey);
    expect(await status(`Bearer ${foreign}`)).toBe(401);
  });

  it('rejects alg none', async () => {
    const now = Math.floor(Date.now() / 1000);
    const claims = { oid: 'u', upn: 'x@y', iss: ISSUER, aud: AUDIENCE, exp: now + 600 };
    const unsigned = `${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims)}.`;
    expect(await status(`Bearer ${unsigned}`)).toBe(401);
  });

  it('rejects an HS256 token signed with the public key (algorithm confusion)', async () => {
    const pem = await exportSPKI(rsa.publicKey);
    const token = await new SignJWT({ oid: 'u', upn: 'x@y' })
      .setProtectedHeader({ alg: 'HS256', kid: 'rsa' })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setExpirationTime('1h')
      .sign(new TextEncoder().encode(pem));
    expect(createPublicKey(pem).asymmetricKeyType).toBe('rsa');
    expect(await status(`Bearer ${token}`)).toBe(401);
  });

  it('rejects a token without exp, a tampered signature, and garbage', async () => {
    const noExp = await new SignJWT({ oid: 'u', upn: 'x@y' })
      .setProtectedHeader({ alg: 'RS256', kid: 'rsa' })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .sign(rsa.privateKey);
    expect(await status(`Bearer ${noExp}`)).toBe(401);
    const good = await sign(rsa.privateKey, 'RS256', 'rsa');
    const [h, p, signature] = good.split('.');
    const claims = JSON.parse(Buffer.from(p!, 'base64url').toString()) as object;
    const tampered = `${h}.${b64({ ...claims, upn: 'admin@example.com' })}.${signature}`;
    expect(await status(`Bearer ${tampered}`)).toBe(401);
    expect(await status('Bearer not.a.jwt')).toBe(401);
  });
});

describe('bearer authentication with the local identity provider', () => {
  it('accepts its own tokens and rejects expired ones', async () => {
    const s = await testServices();
    expect(
      (await call(ROUTES, s, { path: branding, headers: { authorization: `Bearer ${await s.token()}` } })).status,
    ).toBe(200);
    const expired = await s.token({ expiresInSeconds: -120 });
    const r = await call(ROUTES, s, { path: branding, headers: { authorization: `Bearer ${expired}` } });
    expect(r.status).toBe(401);
    expect(r.json).toEqual({ error: { code: 'Unauthorized', message: 'Token expired' } });
  });

  it('serves its public JWKS without the private part', async () => {
    const s = await testServices();
    const r = await call(ROUTES, s, { path: '/.well-known/jwks.json' });
    expect(r.status).toBe(200);
    const { keys } = r.json as { keys: Record<string, unknown>[] };
    expect(keys).toHaveLength(1);
    expect(keys[0]).toMatchObject({ kty: 'EC', alg: 'ES256', use: 'sig' });
    expect(keys[0]).not.toHaveProperty('d');
  });
});
