// The one place the service's managed-identity tokens are minted. Each audience has a fixed set of scopes
// and the hosts its token may travel to, always over https; a client gets a credential bound to one audience
// and checked against the one URL it calls. A request for any other scope (an SDK that re-scopes after a
// 401 challenge naming Key Vault or Azure Resource Manager) is refused, so a configured URL can never turn
// the identity into a token for something else. SECURITY.md lists the audiences.
import type { AccessToken, GetTokenOptions, TokenCredential } from '@azure/core-auth';
import { azureCredential } from './azure-credential.js';

export type Audience = 'storage' | 'cognitive-services' | 'service' | 'cosmos' | 'graph' | 'monitor' | 'sessions';

export const STORAGE_SCOPE = 'https://storage.azure.com/.default';
export const COGNITIVE_SERVICES_SCOPE = 'https://cognitiveservices.azure.com/.default';

/** The scope of tokens for the service's own audience (AUTH_AUDIENCE). */
export const serviceScope = (serviceAudience: string) => `${serviceAudience.replace(/\/+$/, '')}/.default`;

/** Host name suffixes (leading dot) or exact names each audience's token may be sent to. */
export const AUDIENCE_HOSTS: Readonly<Record<Exclude<Audience, 'service'>, readonly string[]>> = {
  storage: ['.blob.core.windows.net', '.queue.core.windows.net', '.dfs.core.windows.net'],
  'cognitive-services': ['.openai.azure.com', '.cognitiveservices.azure.com', '.services.ai.azure.com'],
  cosmos: ['.documents.azure.com'],
  graph: ['graph.microsoft.com'],
  monitor: ['.applicationinsights.azure.com', '.monitor.azure.com', 'dc.services.visualstudio.com'],
  // Azure Container Apps dynamic sessions: the plugin sandbox's session pool (PLUGIN_SESSIONS_ENDPOINT).
  sessions: ['.azurecontainerapps.io'],
};

/** A token refused by the gate: the URL or scope is not one the audience allows. */
export class CredentialGateError extends Error {
  override name = 'CredentialGateError';
}

export interface GateOptions {
  /** The service's own token audience (AUTH_AUDIENCE): tokens for it go only to `serviceHosts`. */
  serviceAudience: string;
  /** SERVICE_TOKEN_HOSTS: the hosts of this service's own tool servers; none by default. */
  serviceHosts: readonly string[];
  /** AZURE_CLIENT_ID: the user-assigned identity, or the default chain. */
  clientId: string | undefined;
  /** The identity behind the gate (tests give a recording one). */
  identity?: TokenCredential;
}

const hostMatches = (host: string, allowed: readonly string[]) =>
  allowed.some((a) => (a.startsWith('.') ? host.endsWith(a) && host.length > a.length : host === a));

export class CredentialGate {
  private readonly identity: TokenCredential;

  constructor(private readonly options: GateOptions) {
    this.identity = options.identity ?? azureCredential(options.clientId);
  }

  /** The scopes a token for the audience may have (the first is asked for); Cosmos's depends on the account's URL. */
  scopes(audience: Audience, url: URL): [string, ...string[]] {
    switch (audience) {
      case 'storage':
        return [STORAGE_SCOPE];
      case 'cognitive-services':
        return [COGNITIVE_SERVICES_SCOPE];
      case 'service':
        return [serviceScope(this.options.serviceAudience)];
      case 'cosmos':
        return [`${url.origin}/.default`, 'https://cosmos.azure.com/.default'];
      case 'graph':
        return ['https://graph.microsoft.com/.default'];
      case 'monitor':
        return ['https://monitor.azure.com//.default', 'https://monitor.azure.com/.default'];
      case 'sessions':
        return ['https://dynamicsessions.io/.default'];
    }
  }

  /** The hosts the audience's token may go to. */
  hosts(audience: Audience): readonly string[] {
    return audience === 'service' ? this.options.serviceHosts : AUDIENCE_HOSTS[audience];
  }

  /** Why a token for the audience may not be sent to the URL, or undefined when it may. */
  urlProblem(audience: Audience, text: string): string | undefined {
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      return 'must be an absolute URL';
    }
    const hosts = this.hosts(audience);
    if (
      url.protocol !== 'https:' ||
      url.username !== '' ||
      url.password !== '' ||
      !hostMatches(url.hostname.toLowerCase(), hosts)
    ) {
      const where =
        hosts.length > 0
          ? hosts.map((h) => (h.startsWith('.') ? `*${h}` : h)).join(', ')
          : 'no host (SERVICE_TOKEN_HOSTS is empty)';
      return `must be an https URL of ${where} to receive a managed-identity token for ${audience}`;
    }
    return undefined;
  }

  /**
   * A credential for one client that calls `url`: it mints tokens of the audience's scopes only, whatever
   * it is asked for. Throws CredentialGateError when the URL may not receive them.
   */
  credentialFor(audience: Audience, url: string): TokenCredential {
    const problem = this.urlProblem(audience, url);
    if (problem) throw new CredentialGateError(`The URL ${problem}`);
    const own = this.scopes(audience, new URL(url));
    const allowed = new Set(own);
    const first = [own[0]];
    const identity = this.identity;
    return {
      // Any other scope (or tenant) asked for is answered with the audience's own token: an SDK that re-scopes
      // after a 401 challenge then retries once with the token the host already had, and fails at once (a
      // refusal would have its token cycler retry every 3 s for the token's lifetime).
      getToken(scopes: string | string[], options?: GetTokenOptions): Promise<AccessToken | null> {
        const wanted = (Array.isArray(scopes) ? scopes : [scopes]).filter((s) => allowed.has(s));
        const { tenantId: _tenant, claims: _claims, ...rest } = options ?? {};
        return identity.getToken(wanted.length > 0 ? wanted : first, rest);
      },
    };
  }

  /** A bearer token of the audience's first scope for one call to `url`. */
  async bearer(audience: Audience, url: string): Promise<string> {
    const credential = this.credentialFor(audience, url);
    const token = await credential.getToken(this.scopes(audience, new URL(url))[0]);
    if (!token) throw new CredentialGateError(`No managed-identity token could be obtained for ${audience}`);
    return token.token;
  }
}

/** The audience a managed-identity endpoint's configured scope names, or undefined for a scope never minted. */
export function audienceOfScope(
  scope: string | undefined,
  serviceAudience: string,
): 'cognitive-services' | 'service' | undefined {
  if (scope === undefined || scope === COGNITIVE_SERVICES_SCOPE) return 'cognitive-services';
  return scope === serviceScope(serviceAudience) ? 'service' : undefined;
}
