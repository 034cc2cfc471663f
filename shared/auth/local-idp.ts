// The local identity provider: a signing key kept in the data folder, its JWKS, token minting for
// `npm run token`, and the code the portal's development sign-in asks for. Used only when no AUTH_* setting
// is given.
import { createHash, createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import { link, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { exportJWK, generateKeyPair, importJWK, SignJWT, type JWK, type CryptoKey } from 'jose';
import { z } from 'zod';
import { errnoCode } from '../errors.js';

const ALG = 'ES256';

/** The default local user: the bootstrap owner when BOOTSTRAP_OWNER_IDS is not set. */
export const LOCAL_DEFAULT_USER = {
  oid: '5e2b6f0a-7c1d-4e8f-9a3b-1c2d3e4f5a6b',
  upn: 'owner@local.test',
  name: 'Local Owner',
} as const;

export interface LocalKey {
  privateKey: CryptoKey;
  /** Public JWKS document served at /.well-known/jwks.json. */
  jwks: { keys: JWK[] };
  kid: string;
}

/** Loads the key pair, creating it on first use (safe when two processes race to create it). */
export async function loadLocalKey(keyFile: string): Promise<LocalKey> {
  const stored = await readOrCreateKey(keyFile);
  const privateKey = await importJWK(stored, ALG);
  // An ES256 JWK always imports as a CryptoKey; only a symmetric (oct) key gives bytes.
  if (privateKey instanceof Uint8Array)
    throw new Error(`The local identity provider's key ${keyFile} is not an EC key`);
  return { privateKey, ...publicKey(stored) };
}

/**
 * The key pair's public JWKS, creating the pair on first use: what verifying needs, without importing the private key.
 */
export async function loadLocalJwks(keyFile: string): Promise<LocalKey['jwks']> {
  return publicKey(await readOrCreateKey(keyFile)).jwks;
}

/** The key file's JWK: a JSON object naming its key type; jose reads the rest. */
const StoredKey = z.looseObject({ kty: z.string(), kid: z.string().optional(), d: z.string().optional() });
const readKey = async (keyFile: string): Promise<JWK> => StoredKey.parse(JSON.parse(await readFile(keyFile, 'utf8')));

async function readOrCreateKey(keyFile: string): Promise<JWK> {
  try {
    return await readKey(keyFile);
  } catch (e) {
    if (errnoCode(e) !== 'ENOENT') throw e;
    return createKey(keyFile);
  }
}

function publicKey(stored: JWK): Pick<LocalKey, 'jwks' | 'kid'> {
  const { d: _private, ...publicJwk } = stored;
  const kid = stored.kid ?? 'local';
  return { kid, jwks: { keys: [{ ...publicJwk, alg: ALG, use: 'sig', kid }] } };
}

async function createKey(keyFile: string): Promise<JWK> {
  const { privateKey } = await generateKeyPair(ALG, { extractable: true });
  const jwk = { ...(await exportJWK(privateKey)), kid: randomUUID() };
  await mkdir(path.dirname(keyFile), { recursive: true, mode: 0o700 });
  const temp = `${keyFile}.${process.pid}.${randomUUID()}.tmp`;
  await writeFile(temp, JSON.stringify(jwk), { mode: 0o600 });
  try {
    // link() is atomic and fails when the file exists: the first writer wins and nobody reads half a file.
    await link(temp, keyFile);
    return jwk;
  } catch (e) {
    if (errnoCode(e) !== 'EEXIST') throw e;
    return await readKey(keyFile);
  } finally {
    await rm(temp, { force: true });
  }
}

/** What the development sign-in code is an HMAC of: a label of its own, so the code reveals nothing of the key. */
const SIGN_IN_CODE_LABEL = 'agent-platform local-idp: portal development sign-in v1';

/**
 * The code the portal's development sign-in asks for, derived from the signing key (created on first use):
 * whoever may read the key file (mode 0600) may sign in, as whoever may run `npm run token`, and nobody
 * else on the machine. It changes only with the key.
 */
export async function localSignInCode(keyFile: string): Promise<string> {
  const { d } = await readOrCreateKey(keyFile);
  if (!d) throw new Error(`The local identity provider's key ${keyFile} has no private part`);
  return createHmac('sha256', Buffer.from(d, 'base64url')).update(SIGN_IN_CODE_LABEL).digest('base64url').slice(0, 32);
}

/** Whether `given` is the sign-in code, compared in constant time (hashed first: no length to time either). */
export async function isLocalSignInCode(keyFile: string, given: string | undefined): Promise<boolean> {
  if (given === undefined || given === '') return false;
  const digest = (v: string) => createHash('sha256').update(v).digest();
  return timingSafeEqual(digest(await localSignInCode(keyFile)), digest(given));
}

/** A stable principal id for a UPN, so repeated `npm run token --upn x` calls name the same user. */
export function oidForUpn(upn: string): string {
  const h = createHash('sha256').update(`local-idp:${upn.toLowerCase()}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

export interface MintOptions {
  upn: string;
  oid?: string;
  name?: string;
  groups?: readonly string[];
  roles?: readonly string[];
  expiresInSeconds?: number;
}

/** Signs an access token as the local identity provider. */
export async function mintLocalToken(key: LocalKey, issuer: string, audience: string, o: MintOptions): Promise<string> {
  const oid = o.oid ?? (o.upn.toLowerCase() === LOCAL_DEFAULT_USER.upn ? LOCAL_DEFAULT_USER.oid : oidForUpn(o.upn));
  return new SignJWT({
    oid,
    upn: o.upn,
    preferred_username: o.upn,
    name: o.name ?? o.upn.split('@')[0],
    groups: [...(o.groups ?? [])],
    ...(o.roles && o.roles.length > 0 ? { roles: [...o.roles] } : {}),
  })
    .setProtectedHeader({ alg: ALG, kid: key.kid, typ: 'JWT' })
    .setSubject(oid)
    .setIssuer(issuer)
    .setAudience(audience)
    .setIssuedAt()
    .setExpirationTime(`${o.expiresInSeconds ?? 3600}s`)
    .sign(key.privateKey);
}
