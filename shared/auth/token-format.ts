// The agent access token string:
// keya.{b58(InstanceId)}.{b58(ContextId)}.{b58(TokenId)}.<client_secret>.ayek
import { createHash, randomBytes } from 'node:crypto';
import bs58 from 'bs58';
import { GUID } from '../schemas.js';

export interface TokenParts {
  instanceId: string;
  /** `{InstanceId}~Svc.Agent~Agents~{AgentName}` */
  contextId: string;
  agentName: string;
  tokenId: string;
  secret: string;
}

const b58 = (text: string) => bs58.encode(Buffer.from(text, 'utf8'));
const unb58 = (text: string) => Buffer.from(bs58.decode(text)).toString('utf8');

export const contextIdOf = (instanceId: string, agentName: string) => `${instanceId}~Svc.Agent~Agents~${agentName}`;

/** A fresh client secret: 256 bits from the CSPRNG, Base58 (no dots, so the format stays parseable). */
export const newSecret = () => bs58.encode(randomBytes(32));

export function formatToken(p: Omit<TokenParts, 'contextId'>): string {
  return [
    'keya',
    b58(p.instanceId),
    b58(contextIdOf(p.instanceId, p.agentName)),
    b58(p.tokenId),
    p.secret,
    'ayek',
  ].join('.');
}

/** Parses a token string; undefined for anything not of the format (validation step 1). */
export function parseToken(token: string): TokenParts | undefined {
  if (token.length > 1024) return undefined;
  const parts = token.split('.');
  if (parts.length !== 6 || parts[0] !== 'keya' || parts[5] !== 'ayek') return undefined;
  const [, instancePart = '', contextPart = '', tokenPart = '', secret = ''] = parts;
  try {
    const instanceId = unb58(instancePart);
    const contextId = unb58(contextPart);
    const tokenId = unb58(tokenPart);
    const prefix = `${instanceId}~Svc.Agent~Agents~`;
    if (
      !GUID.test(instanceId) ||
      !GUID.test(tokenId) ||
      !contextId.startsWith(prefix) ||
      !/^[1-9A-HJ-NP-Za-km-z]{32,64}$/.test(secret)
    )
      return undefined;
    const agentName = contextId.slice(prefix.length);
    if (agentName.length === 0) return undefined;
    return { instanceId, contextId, agentName, tokenId, secret };
  } catch {
    return undefined;
  }
}

/**
 * What is stored instead of the secret: SHA-256 over the token id and the secret. A 256-bit random
 * secret needs no slow password hash; the token id keeps equal secrets from having equal hashes.
 */
export const hashSecret = (tokenId: string, secret: string) =>
  createHash('sha256').update(`${tokenId.toLowerCase()}:${secret}`).digest();
