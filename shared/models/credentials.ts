// How the service authenticates to a model endpoint: nothing, an API key from an allowed secret, or a
// managed-identity token. Tokens are minted only for allowed scopes, and a Cognitive Services token only
// travels to Azure AI hosts over https, so no configuration can send a token where it does not belong.
import type { TokenCredential } from '@azure/core-auth';
import { azureCredential } from '../auth/azure-credential.js';
import { readSecret, type Config } from '../config.js';
import type { EndpointView } from './endpoint.js';
import { UpstreamError } from './upstream-errors.js';

export const COGNITIVE_SERVICES_SCOPE = 'https://cognitiveservices.azure.com/.default';
const AZURE_AI_HOSTS = ['.openai.azure.com', '.cognitiveservices.azure.com', '.services.ai.azure.com'];

/** The scopes managed-identity tokens may be minted for: Cognitive Services and this service's own audience. */
export function allowedScopes(config: Pick<Config, 'auth'>): string[] {
  return [COGNITIVE_SERVICES_SCOPE, `${config.auth.audience.replace(/\/+$/, '')}/.default`];
}

/** Why a managed-identity endpoint may not be used this way; undefined when it may. */
export function identityProblem(url: string, scope: string | undefined, allowed: readonly string[]): string | undefined {
  const wanted = scope ?? COGNITIVE_SERVICES_SCOPE;
  if (!allowed.includes(wanted)) return `authentication_parameters.scope must be one of ${allowed.join(', ')}`;
  if (wanted === COGNITIVE_SERVICES_SCOPE) {
    const u = new URL(url);
    if (u.protocol !== 'https:' || !AZURE_AI_HOSTS.some((h) => u.hostname.toLowerCase().endsWith(h))) {
      return `url must be an https Azure AI endpoint (${AZURE_AI_HOSTS.map((h) => `*${h}`).join(', ')}) to receive a Cognitive Services token`;
    }
  }
  return undefined;
}

const misconfigured = (message: string) => new UpstreamError(502, 'UpstreamConfiguration', message, false, undefined, true);

export class ModelCredentials {
  private credential: TokenCredential | undefined;
  private readonly providers = new Map<string, () => Promise<string>>();
  private readonly allowed: string[];
  private readonly clientId: string | undefined;

  constructor(
    config: Pick<Config, 'auth' | 'azureClientId'>,
    private readonly secret: (name: string) => string | undefined = readSecret,
  ) {
    this.allowed = allowedScopes(config);
    this.clientId = config.azureClientId;
  }

  /** The authentication headers of one call to the endpoint. */
  async headers(e: EndpointView): Promise<Record<string, string>> {
    if (e.authenticationType === 'None') return {};
    if (e.authenticationType === 'APIKey') {
      const key = e.secretName ? this.secret(e.secretName) : undefined;
      if (!key) throw misconfigured(`The API key of the model endpoint (secret ${e.secretName ?? '?'}) is not configured`);
      if (e.provider === 'azure-openai') return { 'api-key': key };
      return e.provider === 'azure-content-safety' ? { 'ocp-apim-subscription-key': key } : { authorization: `Bearer ${key}` };
    }
    const problem = identityProblem(e.url, e.scope, this.allowed);
    if (problem) throw misconfigured(`The model endpoint cannot use a managed identity: ${problem}`);
    return { authorization: `Bearer ${await this.token(e.scope ?? COGNITIVE_SERVICES_SCOPE)}` };
  }

  /** A managed-identity token for an allowed scope (tool servers of this service, Cognitive Services). */
  bearer(scope: string | undefined): Promise<string> {
    const wanted = scope ?? COGNITIVE_SERVICES_SCOPE;
    if (!this.allowed.includes(wanted)) return Promise.reject(misconfigured(`scope must be one of ${this.allowed.join(', ')}`));
    return this.token(wanted);
  }

  private token(scope: string): Promise<string> {
    let provider = this.providers.get(scope);
    if (!provider) {
      const credential = (this.credential ??= azureCredential(this.clientId));
      // The SDK's provider refreshes the token before it expires; loaded with the SDK, on first use.
      const made = import('@azure/identity').then(({ getBearerTokenProvider }) => getBearerTokenProvider(credential, scope));
      provider = async () => (await made)();
      this.providers.set(scope, provider);
    }
    return provider().catch(() => {
      throw misconfigured('No managed-identity token could be obtained for the model endpoint');
    });
  }
}
