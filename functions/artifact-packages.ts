// Artifact packages: export resources as a versioned package, upload or deploy one made elsewhere, download
// it, and plan or apply it against this instance (docs/agents-as-code.md).
import { z } from 'zod';
import { ArtifactResource, ExportBody, type ArtifactPackageDoc } from '../shared/artifacts/packages.js';
import { validationError } from '../shared/errors.js';
import { parseJsonText, readJsonBody } from '../shared/http/json-body.js';
import { bufferedFile, readMultipart } from '../shared/http/multipart.js';
import { defineRoute } from '../shared/http/route.js';
import { API_VERSION, InstanceParams } from '../shared/schemas.js';
import { json } from '../shared/http/types.js';
import { NamePart } from '../shared/plugins/manifest.js';

const base = '/instances/{instanceId}/providers/Svc.Platform/artifactPackages';
const Params = InstanceParams.extend({ name: NamePart });
// As on plugin packages the api-version may be given; here it is not required.
const Query = z.object({
  'api-version': z.literal(API_VERSION, { error: `api-version must be ${API_VERSION}` }).optional(),
});
const common = { api: 'management', tag: 'Svc.Platform', auth: 'bearer', errors: 'management', query: Query } as const;
const scope = (p: z.output<typeof Params>) =>
  `/instances/${p.instanceId}/providers/Svc.Platform/artifactPackages/${p.name}`;
const may =
  (verb: 'read' | 'write' | 'delete') =>
  ({ params }: { params: z.output<typeof Params> }) => ({
    action: `Svc.Platform/artifactPackages/${verb}`,
    scope: scope(params),
  });

const Version = z
  .object({
    package_version: z.string(),
    size: z.number().int(),
    sha256: z.string(),
    source: z.enum(['Export', 'Upload', 'Public', 'Private']),
    uploaded_on: z.string(),
    uploaded_by: z.string(),
    source_instance: z.string().describe('The instance the resources were exported from'),
    resources: z.array(z.object({ object_id: z.string().describe('As on the source instance'), type: z.string() })),
  })
  .meta({ id: 'ArtifactPackageVersion' });
const ArtifactPackage = z
  .object({
    type: z.literal('artifact-package'),
    name: z.string(),
    object_id: z.string(),
    description: z.string(),
    current_version: z.string(),
    versions: z.array(Version),
    created_on: z.string(),
    updated_on: z.string(),
  })
  .meta({ id: 'ArtifactPackage' });
const Changes = z
  .object({
    changes: z.array(
      z.object({
        object_id: z.string().describe('On this instance'),
        action: z.enum(['create', 'update', 'unchanged']),
        fields: z.array(z.string()).describe('The top-level fields a create sets or an update changes'),
      }),
    ),
  })
  .meta({ id: 'ArtifactPackageChanges' });
const VersionBody = z.object({ package_version: z.string().min(1, 'package_version is required') }).strict();

function present(p: ArtifactPackageDoc) {
  const { type, name, object_id, description, current_version, created_on, updated_on } = p;
  return {
    type,
    name,
    object_id,
    description,
    current_version,
    versions: p.versions.map(({ blob_name: _b, ...v }) => v),
    created_on,
    updated_on,
  };
}
const envelope = (p: ArtifactPackageDoc) => ({ object_id: p.object_id, is_success: true, resource: present(p) });
const Saved = z.object({ object_id: z.string(), is_success: z.boolean(), resource: ArtifactPackage });

export const routes = [
  defineRoute({
    ...common,
    name: 'artifact-packages-list',
    method: 'GET',
    path: base,
    summary: 'List artifact packages',
    params: InstanceParams,
    responses: {
      200: {
        description: 'Envelopes of the packages the caller may read',
        schema: z.array(
          z.object({ resource: ArtifactPackage, roles: z.array(z.string()), actions: z.array(z.string()) }),
        ),
      },
    },
    handler: async ({ services, principal }) => {
      const actions = ['read', 'write', 'delete'].map((v) => `Svc.Platform/artifactPackages/${v}`);
      const out = [];
      for (const p of await services.artifacts.list()) {
        const access = await services.authorizer.access(principal, p.object_id, actions);
        if (access.actions.includes(actions[0] ?? '')) out.push({ resource: present(p), ...access });
      }
      return json(200, out);
    },
  }),
  defineRoute({
    ...common,
    name: 'artifact-packages-get',
    method: 'GET',
    path: `${base}/{name}`,
    summary:
      'Get a package with its versions; with loadContent=true download a version (the current one, or `version`)',
    params: Params,
    query: Query.extend({
      loadContent: z.enum(['true', 'false']).optional().describe('true: answer the package ZIP itself'),
      version: z.string().optional().describe('With loadContent=true: a version other than the current one'),
    }),
    permission: may('read'),
    responses: {
      200: {
        description: 'The package envelope; with loadContent=true the ZIP',
        content: [
          { contentType: 'application/json', schema: z.object({ resource: ArtifactPackage }) },
          { contentType: 'application/zip', schema: z.string().meta({ format: 'binary' }) },
        ],
      },
    },
    handler: async ({ services, principal, params, query }) => {
      if (query.loadContent !== 'true')
        return json(200, { resource: present(await services.artifacts.get(params.name)) });
      const { bytes, version } = await services.artifacts.downloadFor(services, principal, {
        name: params.name,
        version: query.version,
      });
      const file = `${params.name}-${version.package_version}.zip`;
      return {
        status: 200,
        headers: {
          'content-type': 'application/zip',
          'content-disposition': `attachment; filename="${file}"`,
          'x-package-version': version.package_version,
        },
        raw: bytes,
      };
    },
  }),
  defineRoute({
    ...common,
    name: 'artifact-packages-upsert',
    method: 'POST',
    path: `${base}/{name}`,
    summary: 'Upload a package version (multipart: file + resource JSON) or add one from a package store (JSON body)',
    params: Params,
    bodyKind: 'stream',
    bodyDoc: [
      {
        contentType: 'multipart/form-data',
        schema: z.object({
          file: z
            .string()
            .meta({ format: 'binary' })
            .describe('The package ZIP: manifest.json and one JSON file per resource'),
          resource: z
            .string()
            .describe('JSON text of the package resource: type artifact-package, name, package_version'),
        }),
      },
      { contentType: 'application/json', schema: ArtifactResource },
    ],
    permission: may('write'),
    responses: {
      200: { description: 'The package with its new current version', schema: Saved },
      409: { description: 'This version exists with other contents' },
    },
    handler: async ({ services, principal, request, params }) => {
      const multipart = (request.header('content-type') ?? '').toLowerCase().startsWith('multipart/form-data');
      const fail = (prefix: string) => (issues: z.core.$ZodIssue[]) =>
        validationError(issues.map((i) => ({ field: `${prefix}${i.path.join('.')}`, message: i.message })));
      if (!multipart) {
        const r = ArtifactResource.safeParse(await readJsonBody(request, services.config.maxJsonBodyBytes));
        if (!r.success) throw fail('')(r.error.issues);
        if (r.data.name !== params.name)
          throw validationError([{ field: 'name', message: `must equal the name in the path (${params.name})` }]);
        return json(200, envelope(await services.artifacts.deploy(r.data, principal)));
      }
      const { fields, files } = await readMultipart(
        request,
        { fileSize: services.packages.maxBytes, fields: 5 },
        bufferedFile('file'),
      );
      const file = files.get('file');
      if (!file) throw validationError([{ field: 'file', message: 'file is required' }]);
      if (fields.resource === undefined)
        throw validationError([{ field: 'resource', message: 'resource is required' }]);
      const r = ArtifactResource.safeParse(parseJsonText(fields.resource, 'resource'));
      if (!r.success) throw fail('resource.')(r.error.issues);
      if (r.data.name !== params.name)
        throw validationError([
          { field: 'resource.name', message: `must equal the name in the path (${params.name})` },
        ]);
      return json(
        200,
        envelope(await services.artifacts.addVersion({ bytes: file, resource: r.data, principal, source: 'Upload' })),
      );
    },
  }),
  defineRoute({
    ...common,
    name: 'artifact-packages-export',
    method: 'POST',
    path: `${base}/{name}/export`,
    summary: 'Write the resources named, as they are now, as a new version of the package (secrets are never exported)',
    params: Params,
    body: ExportBody,
    permission: may('write'),
    responses: {
      200: { description: 'The package with the exported version current', schema: Saved },
      409: { description: 'This version exists with other contents' },
    },
    handler: async ({ services, principal, params, body }) =>
      json(200, envelope(await services.artifacts.export(services, principal, { name: params.name, body }))),
  }),
  defineRoute({
    ...common,
    name: 'artifact-packages-plan',
    method: 'POST',
    path: `${base}/{name}/plan`,
    summary: 'What applying a version would change on this instance, field by field; changes nothing',
    params: Params,
    body: VersionBody,
    permission: may('read'),
    responses: { 200: { description: 'One change per resource, in the order apply writes them', schema: Changes } },
    handler: async ({ services, principal, params, body }) =>
      json(200, {
        changes: await services.artifacts.plan(services, principal, {
          name: params.name,
          version: body.package_version,
        }),
      }),
  }),
  defineRoute({
    ...common,
    name: 'artifact-packages-apply',
    method: 'POST',
    path: `${base}/{name}/apply`,
    summary:
      'Make this instance match a version: checked whole, then written in dependency order; applying again ' +
      'changes nothing',
    params: Params,
    body: VersionBody,
    permission: may('read'),
    responses: {
      200: { description: 'One change per resource, as made', schema: Changes },
      400: {
        description:
          'A definition is refused, or names a resource found neither in the package nor on this instance: ' +
          'nothing was written',
      },
      403: { description: 'The caller may not write one of the resources: nothing was written' },
    },
    handler: async ({ services, principal, params, body }) =>
      json(200, {
        changes: await services.artifacts.apply(services, principal, {
          name: params.name,
          version: body.package_version,
        }),
      }),
  }),
  defineRoute({
    ...common,
    name: 'artifact-packages-delete',
    method: 'DELETE',
    path: `${base}/{name}`,
    summary: 'Soft-delete an artifact package; the name stays taken until purged',
    params: Params,
    permission: may('delete'),
    responses: { 200: { description: 'Deleted', schema: z.object({ object_id: z.string(), deleted: z.boolean() }) } },
    handler: async ({ services, principal, params }) =>
      json(200, { object_id: (await services.artifacts.delete(params.name, principal)).object_id, deleted: true }),
  }),
  defineRoute({
    ...common,
    name: 'artifact-packages-purge',
    method: 'POST',
    path: `${base}/{name}/purge`,
    summary: 'Permanently remove a soft-deleted artifact package and the files of all its versions',
    params: Params,
    permission: may('delete'),
    responses: {
      200: { description: 'Purged', schema: z.object({ object_id: z.string(), is_success: z.boolean() }) },
      409: { description: 'The package is not deleted' },
    },
    handler: async ({ services, params }) =>
      json(200, { object_id: (await services.artifacts.purge(params.name)).object_id, is_success: true }),
  }),
];
