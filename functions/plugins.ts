// Plugin packages and plugins: upload or deploy from a store, list, download, validate a store,
// list and filter plugins. Every call needs api-version=2024-02-16.
import { z } from 'zod';
import type { Principal } from '../shared/auth/principal.js';
import { validationError } from '../shared/errors.js';
import { parseJsonText, readJsonBody } from '../shared/http/json-body.js';
import { bufferedFile, readMultipart } from '../shared/http/multipart.js';
import { defineRoute } from '../shared/http/route.js';
import { API_VERSION, ApiVersionQuery, InstanceParams } from '../shared/schemas.js';
import { json, type PlatformRequest } from '../shared/http/types.js';
import { PackageResource, type PackageDoc } from '../shared/plugins/packages.js';
import type { Authorizer } from '../shared/auth/authorizer.js';
import type { Config } from '../shared/config.js';
import type { PluginPackages } from '../shared/plugins/packages.js';

/** What this module uses of the service (the hosts pass the whole of it). */
export interface PluginsRoutesDeps {
  readonly authorizer: Authorizer;
  readonly config: Config;
  readonly packages: PluginPackages;
}

const base = '/instances/{instanceId}/providers/Svc.Platform';
const PackageParams = InstanceParams.extend({
  packageName: z
    .string()
    .regex(/^(Python|Dotnet)-[A-Za-z0-9_-]{1,100}$/, 'must be {runtime}-{name} with runtime Python or Dotnet'),
});
const common = {
  api: 'management',
  tag: 'Svc.Platform',
  auth: 'bearer',
  errors: 'management',
  query: ApiVersionQuery,
} as const;
const at = (instanceId: string) => `/instances/${instanceId}`;

async function createOrDeploy(
  services: PluginsRoutesDeps,
  { principal, request, name }: { principal: Principal; request: PlatformRequest; name: string },
) {
  const type = request.header('content-type') ?? '';
  if (type.toLowerCase().startsWith('multipart/form-data')) {
    const { fields, files } = await readMultipart(
      request,
      { fileSize: services.packages.maxBytes, fields: 5 },
      bufferedFile('file'),
    );
    const [file, resource] = [files.get('file'), fields.resource];
    if (!file) throw validationError([{ field: 'file', message: 'file is required' }]);
    if (resource === undefined) throw validationError([{ field: 'resource', message: 'resource is required' }]);
    const r = PackageResource.safeParse(parseJsonText(resource, 'resource'));
    if (!r.success)
      throw validationError(r.error.issues.map((i) => ({ field: `resource.${i.path.join('.')}`, message: i.message })));
    return services.packages.addVersion({ bytes: file, resource: r.data, pathName: name, principal, source: 'Upload' });
  }
  const r = PackageResource.safeParse(await readJsonBody(request, services.config.maxJsonBodyBytes));
  if (!r.success) throw validationError(r.error.issues.map((i) => ({ field: i.path.join('.'), message: i.message })));
  return services.packages.deploy(r.data, name, principal);
}

const Plugin = z
  .object({
    type: z.literal('plugin'),
    name: z.string(),
    object_id: z.string(),
    display_name: z.string(),
    description: z.string(),
    category: z.string(),
    plugin_package_object_id: z.string(),
    parameters: z.array(
      z.object({ name: z.string(), type: z.string(), description: z.string(), default_value: z.unknown().optional() }),
    ),
    parameter_selection_hints: z.record(
      z.string(),
      z.object({ resourcePath: z.string(), filterActionPayload: z.record(z.string(), z.string()) }),
    ),
    dependencies: z.array(z.object({ selection_type: z.string(), dependency_plugin_names: z.array(z.string()) })),
  })
  .meta({ id: 'Plugin' });

const PackageVersion = z
  .object({
    package_version: z.string(),
    file_name: z.string(),
    content_type: z.string(),
    size: z.number().int(),
    sha256: z.string(),
    source: z.enum(['Upload', 'Public', 'Private']),
    uploaded_on: z.string(),
    uploaded_by: z.string(),
  })
  .meta({ id: 'PluginPackageVersion' });
const packageFields = {
  type: z.literal('plugin-package'),
  name: z.string().describe('{runtime}-{name}'),
  object_id: z.string(),
  display_name: z.string(),
  description: z.string(),
  package_runtime: z.enum(['Python', 'Dotnet']),
  current_version: z.string(),
};
const PackageSummary = z
  .object({ ...packageFields, versions: z.array(z.string()) })
  .meta({ id: 'PluginPackageSummary' });
const PluginPackage = z
  .object({
    ...packageFields,
    versions: z.array(PackageVersion),
    plugins: z.array(z.string()),
    created_on: z.string(),
    updated_on: z.string(),
  })
  .meta({ id: 'PluginPackage' });
type PackageSummary = z.output<typeof PackageSummary>;
type PluginPackage = z.output<typeof PluginPackage>;

/** The package as lists show it: its versions by number. */
const summaryOf = (p: PackageDoc): PackageSummary => ({
  type: p.type,
  name: p.name,
  object_id: p.object_id,
  display_name: p.display_name,
  description: p.description,
  package_runtime: p.package_runtime,
  current_version: p.current_version,
  versions: p.versions.map((v) => v.package_version),
});

/** The package as get shows it: versions without their manifests, plugins of the current one. */
const packageOf = (p: PackageDoc): PluginPackage => ({
  ...summaryOf(p),
  versions: p.versions.map(({ manifest: _m, blob_name: _b, ...v }) => v),
  plugins: p.versions.find((v) => v.package_version === p.current_version)?.manifest.plugins.map((x) => x.name) ?? [],
  created_on: p.created_on,
  updated_on: p.updated_on,
});

const StoreCheck = z
  .object({
    package_store_type: z.enum(['Public', 'Private']),
    configured: z.boolean(),
    reachable: z.boolean(),
    readable: z.boolean(),
    container: z.string().optional(),
    package_count: z.number().int(),
    packages: z.array(z.string()).describe('Blob names, at most 100'),
    message: z.string(),
  })
  .meta({ id: 'PackageStoreCheck' });
const UploadForm = z.object({
  file: z.string().meta({ format: 'binary' }).describe('The package: a ZIP (Python) or a NuGet file (Dotnet)'),
  resource: z.string().describe('JSON text of the package resource: type, name, package_runtime, package_version'),
});
const PackageBytes = z.string().meta({ format: 'binary' });

export const routes = [
  defineRoute({
    ...common,
    name: 'plugin-packages-validate',
    method: 'POST',
    path: `${base}/pluginPackages/validate`,
    summary: 'Check that a package store is configured, reachable and readable, and list what it holds',
    params: InstanceParams,
    body: z
      .object({
        packageStoreType: z.enum(['Public', 'Private'], { error: 'packageStoreType must be Public or Private' }),
      })
      .strict(),
    permission: ({ params }) => ({ action: 'Svc.Platform/pluginPackages/read', scope: at(params.instanceId) }),
    responses: { 200: { description: 'What the store check found', schema: StoreCheck } },
    handler: async ({ services, body }) => json(200, await services.packages.validateStore(body.packageStoreType)),
  }),
  defineRoute({
    ...common,
    name: 'plugin-packages-upsert',
    method: 'POST',
    path: `${base}/pluginPackages/{packageName}`,
    summary:
      `Upload a package version (multipart: file + resource JSON) or deploy one from a store (JSON body); ` +
      `api-version=${API_VERSION}`,
    params: PackageParams,
    bodyKind: 'stream',
    bodyDoc: [
      { contentType: 'multipart/form-data', schema: UploadForm },
      { contentType: 'application/json', schema: PackageResource },
    ],
    permission: ({ params }) => ({
      action: 'Svc.Platform/pluginPackages/write',
      scope: `${at(params.instanceId)}/providers/Svc.Platform/pluginPackages/${params.packageName}`,
    }),
    responses: {
      200: {
        description: 'The package with its new current version',
        schema: z.object({ object_id: z.string(), is_success: z.boolean(), resource: PluginPackage }),
      },
      409: { description: 'This version exists' },
      413: { description: 'Larger than MAX_PACKAGE_BYTES' },
    },
    handler: async ({ services, principal, request, params }) => {
      const doc = await createOrDeploy(services, { principal, request, name: params.packageName });
      return json(200, { object_id: doc.object_id, is_success: true, resource: packageOf(doc) });
    },
  }),
  defineRoute({
    ...common,
    name: 'plugin-packages-list',
    method: 'GET',
    path: `${base}/pluginPackages`,
    summary: 'List plugin packages',
    params: InstanceParams,
    responses: {
      200: {
        description: 'Envelopes of the packages the caller may read',
        schema: z.array(
          z.object({ resource: PackageSummary, roles: z.array(z.string()), actions: z.array(z.string()) }),
        ),
      },
    },
    handler: async ({ services, principal }) => {
      const actions = ['read', 'write', 'delete'].map((v) => `Svc.Platform/pluginPackages/${v}`);
      const out = [];
      for (const p of await services.packages.list()) {
        const access = await services.authorizer.access(principal, p.object_id, actions);
        if (access.actions.includes(actions[0] ?? '')) out.push({ resource: summaryOf(p), ...access });
      }
      return json(200, out);
    },
  }),
  defineRoute({
    ...common,
    name: 'plugin-packages-get',
    method: 'GET',
    path: `${base}/pluginPackages/{packageName}`,
    summary: 'Get a package; with loadContent=true download its bytes (the current version, or `version`)',
    params: PackageParams,
    query: ApiVersionQuery.extend({
      loadContent: z.enum(['true', 'false']).optional().describe('true: answer the package file itself'),
      version: z.string().optional().describe('With loadContent=true: a version other than the current one'),
    }),
    permission: ({ params }) => ({
      action: 'Svc.Platform/pluginPackages/read',
      scope: `${at(params.instanceId)}/providers/Svc.Platform/pluginPackages/${params.packageName}`,
    }),
    responses: {
      200: {
        description:
          'The package envelope; with loadContent=true the package file (application/zip for Python, ' +
          'application/octet-stream for Dotnet)',
        content: [
          { contentType: 'application/json', schema: z.object({ resource: PluginPackage }) },
          { contentType: 'application/zip', schema: PackageBytes },
          { contentType: 'application/octet-stream', schema: PackageBytes },
        ],
      },
    },
    handler: async ({ services, params, query }) => {
      if (query.loadContent === 'true') {
        const { bytes, version } = await services.packages.download(params.packageName, query.version);
        return {
          status: 200,
          headers: {
            'content-type': version.content_type,
            'content-disposition': `attachment; filename="${version.file_name}"`,
            'x-package-version': version.package_version,
          },
          raw: bytes,
        };
      }
      return json(200, { resource: packageOf(await services.packages.get(params.packageName)) });
    },
  }),
  defineRoute({
    ...common,
    name: 'plugin-packages-delete',
    method: 'DELETE',
    path: `${base}/pluginPackages/{packageName}`,
    summary: 'Soft-delete a plugin package: it and its plugins leave every list; the name stays taken until purged',
    params: PackageParams,
    permission: ({ params }) => ({
      action: 'Svc.Platform/pluginPackages/delete',
      scope: `${at(params.instanceId)}/providers/Svc.Platform/pluginPackages/${params.packageName}`,
    }),
    responses: { 200: { description: 'Deleted', schema: z.object({ object_id: z.string(), deleted: z.boolean() }) } },
    handler: async ({ services, principal, params }) =>
      json(200, {
        object_id: (await services.packages.delete(params.packageName, principal)).object_id,
        deleted: true,
      }),
  }),
  defineRoute({
    ...common,
    name: 'plugin-packages-purge',
    method: 'POST',
    path: `${base}/pluginPackages/{packageName}/purge`,
    summary: 'Permanently remove a soft-deleted plugin package and the files of all its versions',
    params: PackageParams,
    permission: ({ params }) => ({
      action: 'Svc.Platform/pluginPackages/delete',
      scope: `${at(params.instanceId)}/providers/Svc.Platform/pluginPackages/${params.packageName}`,
    }),
    responses: {
      200: { description: 'Purged', schema: z.object({ object_id: z.string(), is_success: z.boolean() }) },
      409: { description: 'The package is not deleted' },
    },
    handler: async ({ services, params }) =>
      json(200, { object_id: (await services.packages.purge(params.packageName)).object_id, is_success: true }),
  }),
  defineRoute({
    ...common,
    name: 'plugins-list',
    method: 'GET',
    path: `${base}/plugins`,
    summary: "Plugins of every package's current version",
    params: InstanceParams,
    permission: ({ params }) => ({ action: 'Svc.Platform/plugins/read', scope: at(params.instanceId) }),
    responses: { 200: { description: 'Plugins', schema: z.array(Plugin) } },
    handler: async ({ services }) => json(200, await services.packages.plugins()),
  }),
  defineRoute({
    ...common,
    name: 'plugins-filter',
    method: 'POST',
    path: `${base}/plugins/filter`,
    summary: 'Plugins whose category is one of the names given (exact, case-sensitive)',
    params: InstanceParams,
    body: z.object({ categories: z.array(z.string(), { error: 'categories must be a list of names' }) }).strict(),
    permission: ({ params }) => ({ action: 'Svc.Platform/plugins/read', scope: at(params.instanceId) }),
    responses: { 200: { description: 'Matching plugins', schema: z.array(Plugin) } },
    handler: async ({ services, body }) =>
      json(
        200,
        (await services.packages.plugins()).filter((p) => body.categories.includes(p.category)),
      ),
  }),
];
