// Management API resource operations: list, get, create-or-update, delete, purge for every
// resource type, generated from the type registry so each type is documented with its own schema.
import { z } from 'zod';
import {
  deleteResource,
  getResource,
  getResourceVersion,
  listResources,
  listResourceVersions,
  purgeResource,
  restoreResourceVersion,
  upsertResource,
} from '../shared/providers/resources.js';
import { RESOURCE_TYPES } from '../shared/registry/registry.js';
import type { ResourceType } from '../shared/providers/resource-rules.js';
import { objectIdOf, partitionOf, ResourceName } from '../shared/providers/types/resource-type.js';
import { defineRoute, type Route } from '../shared/http/route.js';
import { pagedJson, pagedResponse, PageQuery } from '../shared/http/paging.js';
import { json } from '../shared/http/types.js';

const Params = z.object({ instanceId: z.string(), name: ResourceName });
const ListQuery = PageQuery.extend({
  includeDeleted: z
    .enum(['true', 'false'])
    .optional()
    .describe('Include soft-deleted resources (they report deleted: true)'),
});

const Envelope = z.object({
  resource: z.record(z.string(), z.unknown()),
  roles: z.array(z.string()),
  actions: z.array(z.string()),
});
const ObjectIdResult = z.object({ object_id: z.string() });
const VersionParams = Params.extend({
  version: z.coerce.number().int().min(1).describe('A version number, as the versions list gives it'),
});
const VersionList = z.array(z.object({ version: z.number().int(), updated_on: z.string(), updated_by: z.string() }));

function routesFor(t: ResourceType): Route[] {
  const base = `/instances/{instanceId}/providers/${t.provider}/${t.segment}`;
  // Authorization of one resource: the action on its own path (the pipeline checks it before the handler).
  const may =
    (verb: 'read' | 'write' | 'delete') =>
    ({ params }: { params: z.output<typeof Params> }) => ({
      action: `${partitionOf(t)}/${verb}`,
      scope: objectIdOf(params.instanceId, t, params.name),
    });
  const common = {
    api: 'management',
    tag: `${t.provider}/${t.segment}`,
    auth: 'bearer',
    errors: 'management',
  } as const;
  const routes: Route[] = [
    defineRoute({
      ...common,
      name: `${t.segment}-list`,
      method: 'GET',
      path: base,
      summary: `List ${t.segment} the caller may read`,
      params: z.object({ instanceId: z.string() }),
      query: ListQuery,
      responses: { 200: pagedResponse("Envelopes with the caller's roles and actions", Envelope) },
      handler: async ({ services, principal, query }) =>
        pagedJson(
          await listResources(services, { type: t, principal, includeDeleted: query.includeDeleted === 'true', query }),
        ),
    }),
    defineRoute({
      ...common,
      name: `${t.segment}-get`,
      method: 'GET',
      path: `${base}/{name}`,
      summary: `Get one ${t.type} with its full definition`,
      params: Params,
      permission: may('read'),
      responses: { 200: { description: 'Envelope with the full definition', schema: Envelope } },
      handler: async ({ services, principal, params }) =>
        json(200, await getResource(services, { type: t, principal, name: params.name })),
    }),
  ];
  if (t.builtIn || t.serviceWritten) return routes;
  return [
    ...routes,
    defineRoute({
      ...common,
      name: `${t.segment}-upsert`,
      method: 'POST',
      path: `${base}/{name}`,
      summary: `Create or update a ${t.type}`,
      params: Params,
      body: t.schema,
      permission: may('write'),
      responses: {
        200: { description: 'The resource object id', schema: ObjectIdResult },
        409: {
          description:
            'The name is taken by a soft-deleted resource, or differs only by case, or the resource changed meanwhile',
        },
      },
      handler: async ({ services, principal, params, body }) => {
        const { object_id } = await upsertResource(services, { type: t, principal, name: params.name }, body);
        return json(200, { object_id });
      },
    }),
    defineRoute({
      ...common,
      name: `${t.segment}-versions`,
      method: 'GET',
      path: `${base}/{name}/versions`,
      summary: `The versions of a ${t.type}, newest first (the current one included)`,
      params: Params,
      permission: may('read'),
      responses: { 200: { description: 'Each version with when and by whom it was written', schema: VersionList } },
      handler: async ({ services, params }) => json(200, await listResourceVersions(services, t, params.name)),
    }),
    defineRoute({
      ...common,
      name: `${t.segment}-version-get`,
      method: 'GET',
      path: `${base}/{name}/versions/{version}`,
      summary: `One version of a ${t.type}, as its own GET shows the resource`,
      params: VersionParams,
      permission: may('read'),
      responses: { 200: { description: 'Envelope with the definition of that version', schema: Envelope } },
      handler: async ({ services, principal, params }) =>
        json(200, await getResourceVersion(services, { type: t, principal, name: params.name }, params.version)),
    }),
    defineRoute({
      ...common,
      name: `${t.segment}-version-restore`,
      method: 'POST',
      path: `${base}/{name}/versions/{version}/restore`,
      summary: `Make a version of a ${t.type} current again, as a new version`,
      params: VersionParams,
      permission: may('write'),
      responses: {
        200: {
          description: 'The resource object id and its new version',
          schema: z.object({ object_id: z.string(), version: z.number().int() }),
        },
        409: { description: 'The resource is deleted, or changed meanwhile' },
      },
      handler: async ({ services, principal, params }) =>
        json(200, await restoreResourceVersion(services, { type: t, principal, name: params.name }, params.version)),
    }),
    defineRoute({
      ...common,
      name: `${t.segment}-delete`,
      method: 'DELETE',
      path: `${base}/{name}`,
      summary: `Soft-delete a ${t.type} (it blocks its name until purged)`,
      params: Params,
      permission: may('delete'),
      responses: {
        200: { description: 'Deleted', schema: z.object({ object_id: z.string(), deleted: z.boolean() }) },
        409: { description: 'The resource changed meanwhile' },
      },
      handler: async ({ services, principal, params }) =>
        json(200, await deleteResource(services, { type: t, principal, name: params.name })),
    }),
    defineRoute({
      ...common,
      name: `${t.segment}-purge`,
      method: 'POST',
      path: `${base}/{name}/purge`,
      summary: `Permanently remove a soft-deleted ${t.type}`,
      params: Params,
      permission: may('delete'),
      responses: {
        200: { description: 'Purged', schema: z.object({ object_id: z.string(), is_success: z.boolean() }) },
        409: { description: 'The resource is not deleted' },
      },
      handler: async ({ services, principal, params }) =>
        json(200, await purgeResource(services, { type: t, principal, name: params.name })),
    }),
  ];
}

export const routes: Route[] = RESOURCE_TYPES.flatMap(routesFor);
