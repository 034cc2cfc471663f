// The Core API's routes of the portal itself, on this page's own origin and called before anyone signs in:
// the portal's settings and the development sign-in. They take no token and no instance, so they have a
// client of their own.
import createClient from 'openapi-fetch';
import { ApiError } from './api-error';
import type { paths } from './api-types/core';

const portal = createClient<paths>();

type Settings = paths['/portal/config.json']['get']['responses'][200]['content']['application/json'];

/**
 * The portal's settings. The document gives `sign_in` as its kind and any other fields, so the fields each
 * kind has are this narrower view of it (until the document describes them).
 */
export interface PortalConfig extends Omit<Settings, 'sign_in'> {
  sign_in:
    | { kind: 'local' | 'none'; development_sign_in?: boolean }
    | { kind: 'entra'; client_id: string; authority: string; scope: string };
}

export async function loadPortalConfig(): Promise<PortalConfig> {
  const { data, response } = await portal.GET('/portal/config.json');
  if (!data) throw new ApiError(response.status, 'The portal settings could not be loaded');
  // The open `sign_in` read as the fields the service sets for its kind (functions/portal.ts).
  return data as PortalConfig;
}

/** A token of the local identity provider for the user named, or the reason the service refused one. */
export async function localSignIn(
  user: paths['/portal/local-sign-in']['post']['requestBody']['content']['application/json'],
): Promise<{ token: string } | { refused: string }> {
  const { data, error } = await portal.POST('/portal/local-sign-in', { body: user });
  if (data) return { token: data.access_token };
  // The Core API's error: the first field it refused, else its message.
  return { refused: error.error.details?.[0]?.message ?? error.error.message };
}
