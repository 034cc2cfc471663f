// Signing in. Locally the user pastes a token of the local identity provider (what `npm run token` prints),
// or, in development, names a user and the service mints the token, given the sign-in code of the link
// `npm start` prints. With Entra ID configured (PORTAL_ENTRA_*), MSAL signs in by redirect and keeps the
// token fresh; it is loaded only then, so the chat page does not carry it.
import type { PortalConfig } from './portal-routes';

const KEY = 'agent-platform.token';
const CODE_KEY = 'agent-platform.sign-in-code';

/**
 * Takes the development sign-in code from the link `npm start` prints (`#sign-in=<code>`; a fragment is never
 * sent to a server or in a Referer): kept for this tab, and taken out of the address bar so that it is not
 * bookmarked, shared or left in the history. Runs before anything reads the fragment (the management
 * portal's sections).
 */
export function takeSignInCode(): void {
  if (!location.hash.startsWith('#sign-in=')) return;
  const code = new URLSearchParams(location.hash.slice(1)).get('sign-in');
  if (code) sessionStorage.setItem(CODE_KEY, code);
  history.replaceState(history.state, '', `${location.pathname}${location.search}`);
}

/** The development sign-in code this tab was opened with, if any. */
export const signInCode = (): string | undefined => sessionStorage.getItem(CODE_KEY) ?? undefined;

export interface Session {
  token(): Promise<string>;
  user: { name: string; upn: string; oid: string };
  signOut(): void;
}

interface Claims {
  exp?: number;
  oid?: string;
  sub?: string;
  upn?: string;
  preferred_username?: string;
  email?: string;
  name?: string;
}

function claimsOf(token: string): Claims | undefined {
  try {
    const payload = token.split('.')[1] ?? '';
    return JSON.parse(atob(payload.replace(/-/g, '+').replace(/_/g, '/'))) as Claims;
  } catch {
    return undefined;
  }
}

const userOf = (c: Claims) => ({
  name: c.name ?? c.upn ?? c.preferred_username ?? '',
  upn: c.upn ?? c.preferred_username ?? c.email ?? '',
  oid: c.oid ?? c.sub ?? '',
});

/** A pasted token: kept for this tab only, dropped when it expires. */
function localSession(token: string): Session | undefined {
  const claims = claimsOf(token);
  if (!claims || (claims.exp !== undefined && claims.exp * 1000 < Date.now())) return undefined;
  return {
    token: () => Promise.resolve(token),
    user: userOf(claims),
    signOut: () => {
      sessionStorage.removeItem(KEY);
      location.reload();
    },
  };
}

/** The current sign-in, if any (completing an Entra redirect first). */
export async function currentSession(config: PortalConfig): Promise<Session | undefined> {
  if (config.sign_in.kind === 'entra') return entraSession(config.sign_in, false);
  const stored = sessionStorage.getItem(KEY);
  return stored ? localSession(stored) : undefined;
}

/** Signs in with a pasted token; answers why not when it cannot be used. */
export function signInWithToken(token: string): Session | string {
  const trimmed = token.trim();
  const session = localSession(trimmed);
  if (!session) return 'That is not a valid, unexpired token.';
  sessionStorage.setItem(KEY, trimmed);
  return session;
}

export async function signInWithEntra(config: PortalConfig): Promise<void> {
  if (config.sign_in.kind === 'entra') await entraSession(config.sign_in, true);
}

async function entraSession(
  settings: { client_id: string; authority: string; scope: string },
  interactive: boolean,
): Promise<Session | undefined> {
  const { createStandardPublicClientApplication } = await import('@azure/msal-browser');
  const msal = await createStandardPublicClientApplication({
    auth: { clientId: settings.client_id, authority: settings.authority, redirectUri: `${location.origin}/portal/` },
    cache: { cacheLocation: 'sessionStorage' },
  });
  const redirect = await msal.handleRedirectPromise();
  const account = redirect?.account ?? msal.getAllAccounts()[0];
  if (!account) {
    if (interactive) await msal.loginRedirect({ scopes: [settings.scope] });
    return undefined;
  }
  msal.setActiveAccount(account);
  const scopes = [settings.scope];
  const first = await msal.acquireTokenSilent({ scopes, account });
  return {
    token: async () => (await msal.acquireTokenSilent({ scopes, account })).accessToken,
    user: userOf(claimsOf(first.accessToken) ?? { name: account.name ?? '', upn: account.username }),
    signOut: () => void msal.logoutRedirect({ account }),
  };
}
