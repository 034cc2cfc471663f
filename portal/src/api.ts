// The public APIs as the portals call them: one openapi-fetch client per API, typed by the paths of its OpenAPI
// document and rooted at the portal's instance. Every call carries the signed-in user's bearer token, and every
// failure is thrown as an ApiError (a 401 signs the user out first), so callers handle answers only.
import createClient, { type Middleware } from 'openapi-fetch';
import { ApiError, errorOf } from './api-error';
import type { paths as CoreDocument } from './api-types/core';
import type { paths as ManagementDocument } from './api-types/management';
import type { InstancePaths } from './instance-paths';
import type { PortalConfig } from './portal-routes';

/** The api-version the Management API's plugin and analytics routes require. */
export const API_VERSION = '2024-02-16';

/** The signed-in user's token on every request; a failed answer thrown, so none passes for data. */
function signedIn(token: () => Promise<string>, onUnauthorized: () => void): Middleware {
  return {
    async onRequest({ request }) {
      request.headers.set('authorization', `Bearer ${await token()}`);
    },
    async onResponse({ response }) {
      if (response.status === 401) onUnauthorized();
      if (!response.ok) throw await errorOf(response);
    },
  };
}

export type Api = ReturnType<typeof createApi>;

/**
 * The clients read answers as JSON: a route that also answers a file or a stream (a package's bytes, a streamed
 * completion) is read as one by asking for it (parseAs 'blob' or 'stream').
 */
type Media = 'application/json';

export function createApi(config: PortalConfig, token: () => Promise<string>, onUnauthorized: () => void) {
  const instance = `/instances/${config.instance_id}`;
  const core = createClient<InstancePaths<CoreDocument>, Media>({ baseUrl: `${config.core_url}${instance}` });
  const management = createClient<InstancePaths<ManagementDocument>, Media>({
    baseUrl: `${config.management_url}${instance}`,
  });
  const middleware = signedIn(token, onUnauthorized);
  core.use(middleware);
  management.use(middleware);
  return { core, management };
}

/**
 * What a call answered. The clients throw for every failure, so a call without data is one whose route
 * answered no body: a caller that needs one is told so.
 */
export async function answer<Data>(call: Promise<{ data?: Data; response: Response }>): Promise<Data> {
  const { data, response } = await call;
  if (data === undefined) throw new ApiError(response.status, 'The service answered without a body');
  return data;
}

/** The file a call answered (with parseAs 'blob'): an empty file comes with no body at all. */
export async function download(call: Promise<{ data?: Blob; response: Response }>): Promise<Blob> {
  return (await call).data ?? new Blob();
}
