// The parts of undici the service calls: its connection pool (Agent), its request API and its errors, each
// loaded from its own module. undici's package entry loads everything it has (fetch, WebSocket, EventSource,
// mocks, cache stores), and its cookies module reads `globalThis.Headers`, which makes Node load its own
// built-in copy of undici as well: about 13 ms of the Functions app's import and 6 MB of `npm start`'s heap,
// for nothing a model call uses (docs/performance.md, cold-start and peers). The entry is loaded where its
// fetch is needed (`undiciFetch`), on first use. The module paths are undici's own: an upgrade that moves
// them fails at import, in every test. undici-modules.d.ts types them from undici's published types.
import type { Dispatcher, fetch as UndiciFetch } from 'undici';
import requestOn from 'undici/lib/api/api-request.js';
import undiciErrors from 'undici/lib/core/errors.js';

export type { Dispatcher };
export { default as Agent } from 'undici/lib/dispatcher/agent.js';
export const errors = undiciErrors;

export type RequestOptions = Omit<Dispatcher.RequestOptions, 'origin' | 'path' | 'method'> & {
  method?: Dispatcher.HttpMethod;
  dispatcher: Dispatcher;
};

/** undici's `request(url, options)`, always through the dispatcher given (never undici's global one). */
export function request(
  url: string | URL,
  { dispatcher, method = 'GET', ...options }: RequestOptions,
): Promise<Dispatcher.ResponseData> {
  const { origin, pathname, search } = typeof url === 'string' ? new URL(url) : url;
  return requestOn.call(dispatcher, { ...options, origin, path: pathname + search, method });
}

/**
 * undici's fetch, its package entry loaded on the first call. The entry is CommonJS: its exports object is
 * the default export both under Node and in a bundle's chunk (which has no named exports).
 */
export const undiciFetch: typeof UndiciFetch = async (input, init) =>
  (await import('undici')).default.fetch(input, init);
