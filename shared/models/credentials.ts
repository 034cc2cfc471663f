// How the service authenticates to a model endpoint or tool server: nothing, an API key from an allowed
// secret, or a managed-identity token through the credential gate, which mints a token only for the
// audience the configured scope names and only when the URL is a host of that audience, over https.
import type { TokenCredential } from '@azure/core-auth';
import {
  audienceOfScope,
  COGNITIVE_SERVICES_SCOPE,
  CredentialGate,
  serviceScope,
  type Audience,
} from '../net/credential-gate.js';
import { readSecret, type Config } from '../config.js';
import type { EndpointView } from './endpoint.js';
import { UpstreamError } from './upstream-errors.js';

/** The scopes managed-identity tokens may be configured for: Cognitive Services and this service's own audience. */
export function allowedScopes(config: Pick<Config, 'auth'>): string[] {
  return [COGNITIVE_SERVICES_SCOPE, serviceScope(config.auth.audience)];
}

/** The gate of a configuration (tests give the identity behind it). */
export const gateOf = (
  config: Pick<Config, 'auth' | 'azureClientId' | 'serviceTokenHosts'>,
  identity?: TokenCredential,
) =>
  new CredentialGate({
    serviceAudience: config.auth.audience,
    serviceHosts: config.serviceTokenHosts,
    clientId: config.azureClientId,
    ...(identity ? { identity } : {}),
  });

/** A managed-identity endpoint or tool server: its URL and configured scope, and the gate and service it is for. */
export interface IdentityUse {
  url: string;
  scope: string | undefined;
  gate: CredentialGate;
  config: Pick<Config, 'auth'>;
}

/** The audience of the token a managed-identity endpoint or tool server gets, or why it may not get one. */
function identityAudience({ url, scope, gate, config }: IdentityUse): { audience: Audience } | { problem: string } {
  const audience = audienceOfScope(scope, config.auth.audience);
  if (!audience)
    return { problem: `authentication_parameters.scope must be one of ${allowedScopes(config).join(', ')}` };
  const problem = gate.urlProblem(audience, url);
  return problem ? { problem: `url ${problem}` } : { audience };
}

/** Why a managed-identity endpoint or tool server may not be used this way; undefined when it may. */
export function identityProblem(use: IdentityUse): string | undefined {
  const checked = identityAudience(use);
  return 'problem' in checked ? checked.problem : undefined;
}

const misconfigured = (message: string) =>
  new UpstreamError('upstream-failed', 'UpstreamConfiguration', message, { retryable: false, permanent: true });

export class ModelCredentials {
  private readonly providers = new Map<string, () => Promise<string>>();

  constructor(
    private readonly config: Pick<Config, 'auth'>,
    readonly gate: CredentialGate,
    private readonly secret: (name: string) => string | undefined = readSecret,
  ) {}

  /** The authentication headers of one call to the endpoint. */
  async headers(e: EndpointView): Promise<Record<string, string>> {
    if (e.authenticationType === 'None') return {};
    if (e.authenticationType === 'APIKey') {
      const key = e.secretName ? this.secret(e.secretName) : undefined;
      if (!key)
        throw misconfigured(`The API key of the model endpoint (secret ${e.secretName ?? '?'}) is not configured`);
      if (e.provider === 'azure-openai') return { 'api-key': key };
      return e.provider === 'azure-content-safety'
        ? { 'ocp-apim-subscription-key': key }
        : { authorization: `Bearer ${key}` };
    }
    return { authorization: `Bearer ${await this.bearer(e.url, e.scope)}` };
  }

  /** A managed-identity token for a call to `url` with the configured scope; refused unless the gate allows both. */
  bearer(url: string, scope: string | undefined): Promise<string> {
    const checked = identityAudience({ url, scope, gate: this.gate, config: this.config });
    if ('problem' in checked)
      return Promise.reject(misconfigured(`A managed-identity token cannot be sent there: ${checked.problem}`));
    const { audience } = checked;
    const origin = new URL(url).origin;
    const key = `${audience} ${origin}`;
    let provider = this.providers.get(key);
    if (!provider) {
      const credential = this.gate.credentialFor(audience, url);
      const [wanted] = this.gate.scopes(audience, new URL(url));
      // The SDK's provider refreshes the token before it expires; loaded with the SDK, on first use.
      const made = import('@azure/identity').then(({ getBearerTokenProvider }) =>
        getBearerTokenProvider(credential, wanted),
      );
      provider = async () => (await made)();
      if (this.providers.size > 1000) this.providers.clear();
      this.providers.set(key, provider);
    }
    return provider().catch(() => {
      throw misconfigured('No managed-identity token could be obtained');
    });
  }
}
