// Resources as the lists and pickers read them: each as a Resource (resource.ts), whichever its type.
import { answer, API_VERSION, type Api } from '../api';
import { all } from '../paging';
import { type Resource, unwrap } from '../resource';
import type { ResourcePath } from './types';

/** The plugins: a list of the plugins themselves (not envelopes), not paged, asked for by api-version. */
export const PLUGINS = 'Svc.Platform/plugins';

/** Resource types with a list. */
export type ListPath = ResourcePath | typeof PLUGINS;

/** Every resource of a type; deleted ones too when asked for (they can then be purged). */
export async function listResources(api: Api, path: ListPath, includeDeleted = false): Promise<Resource[]> {
  if (path === PLUGINS) {
    return answer(
      api.management.GET('/providers/Svc.Platform/plugins', { params: { query: { 'api-version': API_VERSION } } }),
    );
  }
  const list = await all((query) =>
    api.management.GET(`/providers/${path}`, {
      params: { query: includeDeleted ? { ...query, includeDeleted: 'true' } : query },
    }),
  );
  return list.map(unwrap);
}

/** One resource, read whole (a list gives a summary of each). */
export async function readResource(api: Api, path: ResourcePath, name: string): Promise<Resource> {
  return unwrap(await answer(api.management.GET(`/providers/${path}/{name}`, { params: { path: { name } } })));
}
