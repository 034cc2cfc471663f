// Picks the credential a request carries and verifies it: bearer JWT, or (Core API and facades) an agent access token.
import { unauthorized } from '../errors.js';
import type { PlatformRequest } from '../http/types.js';
import type { BearerVerifier } from './bearer.js';
import type { AuthMode, Principal } from './principal.js';

/** Verifies agent access tokens (`X-AGENT-ACCESS-TOKEN`). */
export interface AgentTokenVerifier {
  verify(token: string): Promise<Principal>;
}

export interface Authenticator {
  /** The caller's principal; throws a 401 DomainError when the credential is missing or invalid. */
  authenticate(request: PlatformRequest, mode: Exclude<AuthMode, 'none'>): Promise<Principal>;
}

export const AGENT_TOKEN_HEADER = 'x-agent-access-token';
/** Where Azure OpenAI's clients send their key: the facades take an agent access token there. */
export const API_KEY_HEADER = 'api-key';

/** Whether a bearer credential is an agent access token (`keya.` ... `.ayek`) rather than a JWT. */
const isAgentToken = (token: string) => token.startsWith('keya.') && token.endsWith('.ayek');

export interface AuthenticatorOptions {
  agentTokens?: AgentTokenVerifier;
  /** Told of every user a bearer token authenticated (the principal directory records them). */
  onUser?: (principal: Principal) => void;
  /** The user as the owner of their data (a reused UPN acts as an owner of its own). */
  owner?: (principal: Principal) => Promise<Principal>;
}

export function createAuthenticator(bearer: BearerVerifier, options: AuthenticatorOptions = {}): Authenticator {
  const { agentTokens, onUser, owner } = options;
  return {
    async authenticate(request, mode) {
      const authorization = request.header('authorization');
      if (authorization !== undefined) {
        const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
        if (!match?.[1]) throw unauthorized('Authorization header must be "Bearer <token>"');
        // The facades' clients send their key as the bearer token: an agent access token has its own format.
        if (mode === 'protocol' && agentTokens && isAgentToken(match[1])) return agentTokens.verify(match[1]);
        const verified = await bearer.verify(match[1]);
        onUser?.(verified);
        return owner ? owner(verified) : verified;
      }
      const agentToken =
        request.header(AGENT_TOKEN_HEADER) ?? (mode === 'protocol' ? request.header(API_KEY_HEADER) : undefined);
      if (agentToken !== undefined) {
        // Token holders have Data.Read on one agent: never the Management API.
        if (mode === 'bearer' || !agentTokens) throw unauthorized('Agent access tokens are not accepted here');
        return agentTokens.verify(agentToken);
      }
      throw unauthorized();
    },
  };
}
