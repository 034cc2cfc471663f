// Every resource type over HTTP: lifecycle, envelopes, validation and role-based access.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oidForUpn } from '../../../shared/auth/local-idp.js';
import { ROLE_IDS, roleDefinitionPath } from '../../../shared/providers/types/roles.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { INSTANCE } from '../../support/services.js';

const id = (provider: string, segment: string, name: string) =>
  `/instances/${INSTANCE}/providers/${provider}/${segment}/${name}`;

/** A valid definition of each type, and the field a broken body leaves out. */
const SAMPLES: {
  provider: string;
  segment: string;
  type: string;
  body: (name: string) => Record<string, unknown>;
  required: string;
}[] = [
  {
    provider: 'Svc.Agent',
    segment: 'agents',
    type: 'agent',
    body: (name) => ({ name, display_name: 'An agent', description: 'Helps' }),
    required: 'name',
  },
  {
    provider: 'Svc.Agent',
    segment: 'workflows',
    type: 'workflow',
    body: (name) => ({
      name,
      workflow_type: 'chat',
      workflow_host: 'builtin',
      main_ai_model_object_id: id('Svc.AIModel', 'aiModels', 'm'),
      main_prompt_object_id: id('Svc.Prompt', 'prompts', 'p'),
    }),
    required: 'main_ai_model_object_id',
  },
  {
    provider: 'Svc.Agent',
    segment: 'tools',
    type: 'tool',
    body: (name) => ({ name, tool_type: 'plugin', description: 'A tool' }),
    required: 'tool_type',
  },
  {
    provider: 'Svc.Prompt',
    segment: 'prompts',
    type: 'prompt',
    body: (name) => ({ name, category: 'Workflow', prefix: 'You are helpful.', suffix: 'Be brief.' }),
    required: 'prefix',
  },
  {
    provider: 'Svc.DataSource',
    segment: 'dataSources',
    type: 'data-source',
    body: (name) => ({
      name,
      data_source_type: 'AzureBlob',
      configuration: { connection_string_secret_name: 'blob-cs', containers: ['docs'] },
    }),
    required: 'data_source_type',
  },
  {
    provider: 'Svc.DataPipeline',
    segment: 'dataPipelines',
    type: 'data-pipeline',
    body: (name) => ({
      name,
      data_source_object_id: id('Svc.DataSource', 'dataSources', 'd'),
      source_paths: ['docs/'],
      index_name: 'docs',
      embedding_ai_model_object_id: id('Svc.AIModel', 'aiModels', 'embedding'),
    }),
    required: 'index_name',
  },
  {
    provider: 'Svc.AIModel',
    segment: 'aiModels',
    type: 'ai-model',
    body: (name) => ({
      name,
      model_type: 'completion',
      deployment_name: 'gpt-4o',
      api_endpoint_object_id: id('Svc.Configuration', 'apiEndpointConfigurations', 'e'),
    }),
    required: 'deployment_name',
  },
  {
    provider: 'Svc.Configuration',
    segment: 'appConfigurations',
    type: 'app-configuration',
    body: (name) => ({ name, key: name, value: 'v' }),
    required: 'value',
  },
  {
    provider: 'Svc.Configuration',
    segment: 'apiEndpointConfigurations',
    type: 'api-endpoint',
    body: (name) => ({
      name,
      category: 'LLM',
      provider: 'openai',
      url: 'http://127.0.0.1:8080/v1',
      authentication_type: 'None',
    }),
    required: 'url',
  },
  {
    provider: 'Svc.Authorization',
    segment: 'roleAssignments',
    type: 'role-assignment',
    body: (name) => ({
      name,
      principal_id: oidForUpn('nobody@example.com'),
      principal_type: 'User',
      role_definition_id: roleDefinitionPath(ROLE_IDS.reader),
      scope: `/instances/${INSTANCE}`,
    }),
    required: 'principal_id',
  },
];

describe('Management API resources', () => {
  let app: TestApp;
  const url = (provider: string, segment: string, name?: string) =>
    `${app.management}/instances/${INSTANCE}/providers/${provider}/${segment}` +
    (name ? `/${encodeURIComponent(name)}` : '');

  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app.close());

  describe.each(SAMPLES)('$provider/$segment', (sample) => {
    const name =
      sample.segment === 'roleAssignments'
        ? randomUUID()
        : sample.segment === 'appConfigurations'
          ? 'Svc:Test:Value'
          : `${sample.type}-1`;

    it('goes through create, get, list, delete, get deleted, purge, 404', async () => {
      const objectId = id(sample.provider, sample.segment, name);
      const created = await app.call('POST', url(sample.provider, sample.segment, name), { body: sample.body(name) });
      expect(created).toMatchObject({ status: 200, body: { object_id: objectId } });

      const got = await app.call('GET', url(sample.provider, sample.segment, name));
      expect(got.status).toBe(200);
      const envelope = got.body as { resource: Record<string, unknown>; roles: string[]; actions: string[] };
      expect(envelope.resource).toMatchObject({
        ...sample.body(name),
        type: sample.type,
        name,
        object_id: objectId,
        deleted: false,
        created_by: 'owner@local.test',
      });
      expect(envelope.resource.created_on).toEqual(expect.any(String));
      expect(envelope.roles).toContain('Owner');
      expect(envelope.actions).toEqual(
        ['read', 'write', 'delete'].map((v) => `${sample.provider}/${sample.segment}/${v}`),
      );

      const listed = await app.call('GET', url(sample.provider, sample.segment));
      expect((listed.body as { resource: { name: string } }[]).map((e) => e.resource.name)).toContain(name);

      expect(await app.call('DELETE', url(sample.provider, sample.segment, name))).toMatchObject({
        status: 200,
        body: { object_id: objectId, deleted: true },
      });
      expect(await app.call('GET', url(sample.provider, sample.segment, name))).toMatchObject({
        status: 200,
        body: { resource: { deleted: true } },
      });
      const afterDelete = (await app.call('GET', url(sample.provider, sample.segment))).body as {
        resource: { name: string };
      }[];
      expect(afterDelete.map((e) => e.resource.name)).not.toContain(name);
      const withDeleted = (await app.call('GET', `${url(sample.provider, sample.segment)}?includeDeleted=true`))
        .body as { resource: { name: string; deleted: boolean } }[];
      expect(withDeleted.find((e) => e.resource.name === name)?.resource.deleted).toBe(true);

      // The name stays taken until purged.
      expect(
        await app.call('POST', url(sample.provider, sample.segment, name), { body: sample.body(name) }),
      ).toMatchObject({ status: 409, body: { error: { code: 'Conflict' } } });
      expect(await app.call('POST', `${url(sample.provider, sample.segment, name)}/purge`)).toMatchObject({
        status: 200,
        body: { object_id: objectId, is_success: true },
      });
      expect(await app.call('GET', url(sample.provider, sample.segment, name))).toMatchObject({
        status: 404,
        body: { error: { code: 'NotFound' } },
      });
      expect(
        await app.call('POST', url(sample.provider, sample.segment, name), { body: sample.body(name) }),
      ).toMatchObject({ status: 200 });
    });

    it('rejects bad bodies with 400 naming the field, and stores nothing', async () => {
      const bad = `${sample.type}-bad`;
      const missing = { ...sample.body(bad) };
      Reflect.deleteProperty(missing, sample.required);
      const r1 = await app.call('POST', url(sample.provider, sample.segment, bad), { body: missing });
      expect(r1.status).toBe(400);
      expect((r1.body as { error: { code: string; message: string } }).error).toMatchObject({
        code: 'BadRequest',
        message: expect.stringContaining(sample.required) as string,
      });
      const r2 = await app.call('POST', url(sample.provider, sample.segment, bad), {
        body: { ...sample.body(bad), surprise: 1 },
      });
      expect(r2.status).toBe(400);
      expect(JSON.stringify(r2.body)).toContain('surprise');
      const r3 = await app.call('POST', url(sample.provider, sample.segment, bad), {
        body: { ...sample.body(bad), name: 'other-name' },
      });
      expect(r3.status).toBe(400);
      expect(JSON.stringify(r3.body)).toContain('name');
      expect((await app.call('GET', url(sample.provider, sample.segment, bad))).status).toBe(404);
    });
  });

  it('ignores service fields sent back from a GET, and keeps created_on on update', async () => {
    await app.call('POST', url('Svc.Prompt', 'prompts', 'roundtrip'), { body: { name: 'roundtrip', prefix: 'a' } });
    const first = (
      (await app.call('GET', url('Svc.Prompt', 'prompts', 'roundtrip'))).body as { resource: Record<string, unknown> }
    ).resource;
    const updated = await app.call('POST', url('Svc.Prompt', 'prompts', 'roundtrip'), {
      body: { ...first, prefix: 'b', created_on: '1999-01-01T00:00:00Z' },
    });
    expect(updated.status).toBe(200);
    const second = (
      (await app.call('GET', url('Svc.Prompt', 'prompts', 'roundtrip'))).body as { resource: Record<string, unknown> }
    ).resource;
    expect(second).toMatchObject({ prefix: 'b', created_on: first.created_on });
    expect(second.updated_on).not.toBe('1999-01-01T00:00:00Z');
  });

  it('rejects a purge of a resource that is not deleted, and unknown names', async () => {
    await app.call('POST', url('Svc.Agent', 'tools', 'live'), { body: { name: 'live', tool_type: 'plugin' } });
    expect(await app.call('POST', `${url('Svc.Agent', 'tools', 'live')}/purge`)).toMatchObject({ status: 409 });
    expect(await app.call('DELETE', url('Svc.Agent', 'tools', 'ghost'))).toMatchObject({ status: 404 });
    expect(await app.call('POST', `${url('Svc.Agent', 'tools', 'ghost')}/purge`)).toMatchObject({ status: 404 });
  });

  it('lists the built-in role definitions, read-only', async () => {
    const r = await app.call('GET', url('Svc.Authorization', 'roleDefinitions'));
    const names = (r.body as { resource: { display_name: string; name: string } }[]).map(
      (e) => e.resource.display_name,
    );
    expect(names).toEqual([
      'Owner',
      'Contributor',
      'Reader',
      'User Access Administrator',
      'Role Based Access Control Administrator',
      'Agent Access Tokens Contributor',
      'Analytics Reader',
    ]);
    const owner = await app.call('GET', url('Svc.Authorization', 'roleDefinitions', ROLE_IDS.owner));
    expect((owner.body as { resource: Record<string, unknown> }).resource).toMatchObject({
      object_id: roleDefinitionPath(ROLE_IDS.owner),
      permissions: { actions: ['*'] },
      assignable_scopes: ['/'],
    });
    expect(
      (await app.call('POST', url('Svc.Authorization', 'roleDefinitions', 'x'), { body: { name: 'x' } })).status,
    ).toBe(405);
  });

  it('answers 401 without a token', async () => {
    const r = await fetch(url('Svc.Agent', 'agents'));
    expect(r.status).toBe(401);
    expect(await r.json()).toEqual({ error: { code: 'Unauthorized', message: 'Authentication required' } });
  });
});
