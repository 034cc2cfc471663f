// The service's Azure identity (its managed identity in Azure, a developer's sign-in elsewhere), with the
// Azure Identity SDK loaded on the first token asked for: it is large, and a local run never needs it.
import type { AccessToken, GetTokenOptions, TokenCredential } from '@azure/core-auth';

/** DefaultAzureCredential for the user-assigned identity `clientId` (or the default chain), made on first use. */
export function azureCredential(clientId: string | undefined): TokenCredential {
  let credential: Promise<TokenCredential> | undefined;
  return {
    async getToken(scopes: string | string[], options?: GetTokenOptions): Promise<AccessToken | null> {
      credential ??= import('@azure/identity').then(
        ({ DefaultAzureCredential }) =>
          new DefaultAzureCredential(clientId ? { managedIdentityClientId: clientId } : {}),
      );
      return (await credential).getToken(scopes, options);
    },
  };
}
