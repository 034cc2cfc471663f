// Identity-provider bearer tokens: verified with jose against a JWKS (remote in Azure, the local key locally).
import { createLocalJWKSet, createRemoteJWKSet, errors, jwtVerify, type JWTVerifyGetKey } from 'jose';
import type { AuthConfig } from '../config.js';
import { unauthorized } from '../errors.js';
import { loadLocalJwks } from './local-idp.js';
import { principalFromClaims, type Principal } from './principal.js';

const VERIFIED_CACHE_SIZE = 10_000;

export interface BearerVerifier {
  verify(token: string): Promise<Principal>;
  /** The local identity provider's JWKS, when it is the one in use. */
  readonly localJwks?: { keys: unknown[] };
  /** Whether the identity provider's signing keys are loaded (fetched once when they are remote). */
  keysLoaded(): Promise<boolean>;
}

/** Builds the verifier for the configured identity provider. */
export async function createBearerVerifier(config: AuthConfig): Promise<BearerVerifier> {
  let keys: JWTVerifyGetKey;
  let localJwks: BearerVerifier['localJwks'];
  let keysLoaded: () => Promise<boolean> = () => Promise.resolve(true);
  if (config.kind === 'jwks') {
    const remote = createRemoteJWKSet(new URL(config.jwksUri), {
      cooldownDuration: 30_000,
      cacheMaxAge: 10 * 60_000,
      timeoutDuration: 2000,
    });
    keys = remote;
    keysLoaded = () =>
      remote.jwks()
        ? Promise.resolve(true)
        : remote.reload().then(
            () => remote.jwks() !== undefined,
            () => false,
          );
  } else {
    const jwks = await loadLocalJwks(config.keyFile);
    keys = createLocalJWKSet(jwks);
    localJwks = jwks;
  }
  // Verified tokens, so a client's repeated calls skip the signature check until the token expires.
  const verified = new Map<string, { principal: Principal; expiresAt: number }>();
  return {
    ...(localJwks ? { localJwks } : {}),
    keysLoaded,
    async verify(token) {
      const hit = verified.get(token);
      if (hit && hit.expiresAt > Date.now()) return hit.principal;
      if (hit) verified.delete(token);
      try {
        const { payload } = await jwtVerify(token, keys, {
          issuer: config.issuer,
          audience: config.audience,
          algorithms: ['RS256', 'ES256'],
          requiredClaims: ['exp'],
          clockTolerance: 60,
        });
        const principal = principalFromClaims(payload);
        if (!principal) throw unauthorized('Token has no subject or user principal name');
        if (verified.size >= VERIFIED_CACHE_SIZE) verified.delete(verified.keys().next().value ?? '');
        // exp is required above; the tolerance is not extended to cached tokens.
        verified.set(token, { principal, expiresAt: Math.min((payload.exp ?? 0) * 1000, Date.now() + 10 * 60_000) });
        return principal;
      } catch (e) {
        if (e instanceof errors.JOSEError) throw unauthorized(describe(e));
        throw e;
      }
    },
  };
}

function describe(e: InstanceType<typeof errors.JOSEError>): string {
  if (e instanceof errors.JWTExpired) return 'Token expired';
  if (e instanceof errors.JWTClaimValidationFailed) return `Token claim "${e.claim}" is invalid`;
  return 'Token invalid';
}
