// Artifact packages over HTTP: a hostile or mismatched upload refused with nothing stored, versions
// immutable (the same bytes again accepted), download by version, a deploy from the Private store by a
// second instance sharing it, apply refused whole for a caller who may not write, and delete and purge.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oidForUpn } from '../../../shared/auth/local-idp.js';
import { ROLE_IDS, roleDefinitionPath } from '../../../shared/providers/types/roles.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { rename, zip } from '../../support/packages.js';
import { INSTANCE } from '../../support/services.js';
import { containerOf } from '../../support/storage.js';

describe('artifact packages', () => {
  let app: TestApp;
  let other: TestApp;
  const store = `ap-${randomUUID().slice(0, 8)}`;
  const packages = (a: TestApp, path = '') =>
    `${a.management}/instances/${INSTANCE}/providers/Svc.Platform/artifactPackages${path}`;
  const prompt = (name: string) => `/instances/${INSTANCE}/providers/Svc.Prompt/prompts/${name}`;
  const upload = (name: string, bytes: Buffer, resource: Record<string, unknown>) => {
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(bytes)]), `${name}.zip`);
    form.append('resource', JSON.stringify(resource));
    return app
      .token()
      .then((token) =>
        fetch(packages(app, `/${name}`), { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form }),
      );
  };
  const download = async (name: string, version?: string) => {
    const r = await fetch(packages(app, `/${name}?loadContent=true${version ? `&version=${version}` : ''}`), {
      headers: { authorization: `Bearer ${await app.token()}` },
    });
    return { status: r.status, version: r.headers.get('x-package-version'), bytes: Buffer.from(await r.arrayBuffer()) };
  };
  const exportPrompts = (name: string, version: string, names: string[], a = app) =>
    a.call('POST', packages(a, `/${name}/export`), {
      body: { package_version: version, resource_object_ids: names.map(prompt) },
    });

  beforeAll(async () => {
    [app, other] = await Promise.all([
      startTestApp({ PACKAGE_STORE_PRIVATE_CONTAINER: store }),
      startTestApp({ PACKAGE_STORE_PRIVATE_CONTAINER: store }),
    ]);
    for (const name of ['alpha', 'beta'])
      expect(
        (await app.call('POST', `${app.management}${prompt(name)}`, { body: { name, prefix: `I am ${name}.` } }))
          .status,
      ).toBe(200);
  });
  afterAll(async () => {
    await Promise.all([app.close(), other.close()]);
  });

  it('exports versions, keeps each one downloadable, and refuses other bytes under a version', async () => {
    expect((await exportPrompts('prompts', '1.0.0', ['alpha'])).status).toBe(200);
    expect(
      (await app.call('POST', `${app.management}${prompt('alpha')}`, { body: { name: 'alpha', prefix: 'I changed.' } }))
        .status,
    ).toBe(200);
    const second = await exportPrompts('prompts', '1.1.0', ['alpha', 'beta']);
    expect(second.body).toMatchObject({
      resource: {
        current_version: '1.1.0',
        versions: [
          { package_version: '1.0.0', source: 'Export' },
          { package_version: '1.1.0', resources: [{ type: 'prompt' }, { type: 'prompt' }] },
        ],
      },
    });
    const first = await download('prompts', '1.0.0');
    expect(first).toMatchObject({ status: 200, version: '1.0.0' });
    // A version is immutable: exporting it again from changed resources is 409; the same bytes again are accepted.
    expect((await exportPrompts('prompts', '1.0.0', ['alpha'])).status).toBe(409);
    const again = await upload('prompts', first.bytes, {
      type: 'artifact-package',
      name: 'prompts',
      package_version: '1.0.0',
    });
    expect(again.status).toBe(200);
    expect((await download('prompts')).version).toBe('1.1.0');
  });

  it('refuses a hostile or mismatched upload, storing nothing', async () => {
    const manifest = (
      name: string,
      version: string,
      resources: unknown[] = [{ object_id: prompt('x'), type: 'prompt', file: 'resources/x.json' }],
    ) =>
      JSON.stringify({
        type: 'artifact-package',
        name,
        version,
        source_instance: INSTANCE,
        exported_on: '2026-11-26T00:00:00Z',
        exported_by: 'someone',
        resources,
      });
    const cases: [string, Buffer, string][] = [
      ['not a zip', Buffer.from('plain text'), 'Invalid package archive'],
      ['no manifest', await zip([{ name: 'resources/x.json', data: '{}' }]), 'manifest.json is missing'],
      [
        'a listed file missing',
        await zip([{ name: 'manifest.json', data: manifest('bad', '1.0.0') }]),
        'resources/x.json is missing',
      ],
      [
        'a file of another type',
        await zip([
          { name: 'manifest.json', data: manifest('bad', '1.0.0') },
          { name: 'resources/x.json', data: '{"type":"agent","name":"x"}' },
        ]),
        'is not a prompt',
      ],
      [
        'another name inside',
        await zip([
          { name: 'manifest.json', data: manifest('other', '1.0.0') },
          { name: 'resources/x.json', data: '{"type":"prompt","name":"x"}' },
        ]),
        'declares other',
      ],
      [
        'path traversal',
        await zip([
          { name: 'manifest.json', data: manifest('bad', '1.0.0') },
          { name: 'aa/evil.json', data: '{}' },
        ]).then((b) => rename(b, 'aa/evil.json', '../evil.json')),
        'Invalid package archive',
      ],
    ];
    for (const [what, bytes, message] of cases) {
      const r = await upload('bad', bytes, { type: 'artifact-package', name: 'bad', package_version: '1.0.0' });
      expect(r.status, what).toBe(400);
      expect(await r.text(), what).toContain(message);
    }
    expect((await app.call('GET', packages(app, '/bad'))).status).toBe(404);
    expect(
      (await upload('bad', Buffer.from('x'), { type: 'plugin-package', name: 'bad', package_version: '1.0.0' })).status,
    ).toBe(400);
  });

  it('lets another instance sharing the Private store add a version from it, and plan and apply it', async () => {
    const deployed = await other.call('POST', packages(other, '/prompts'), {
      body: { type: 'artifact-package', name: 'prompts', package_version: '1.1.0', package_store_type: 'Private' },
    });
    expect(deployed.status, JSON.stringify(deployed.body)).toBe(200);
    expect(deployed.body).toMatchObject({ resource: { versions: [{ package_version: '1.1.0', source: 'Private' }] } });
    expect(
      (
        await other.call('POST', packages(other, '/prompts'), {
          body: { type: 'artifact-package', name: 'prompts', package_version: '9.9.9' },
        })
      ).status,
    ).toBe(404);
    expect(
      (
        await other.call('POST', packages(other, '/prompts'), {
          body: { type: 'artifact-package', name: 'prompts', package_version: '1.0.0', package_store_type: 'Public' },
        })
      ).status,
    ).toBe(400);

    // A Reader of the instance may read the package but not write the prompts: refused whole.
    const reader = 'reader@example.com';
    const assignment = randomUUID();
    expect(
      (
        await other.call(
          'POST',
          `${other.management}/instances/${INSTANCE}/providers/Svc.Authorization/roleAssignments/${assignment}`,
          {
            body: {
              name: assignment,
              principal_id: oidForUpn(reader),
              principal_type: 'User',
              role_definition_id: roleDefinitionPath(ROLE_IDS.reader),
              scope: `/instances/${INSTANCE}`,
            },
          },
        )
      ).status,
    ).toBe(200);
    expect(
      (await other.call('POST', packages(other, '/prompts/apply'), { body: { package_version: '1.1.0' }, as: reader }))
        .status,
    ).toBe(403);
    expect((await other.call('GET', `${other.management}${prompt('alpha')}`)).status).toBe(404);

    const plan = await other.call('POST', packages(other, '/prompts/plan'), { body: { package_version: '1.1.0' } });
    expect(plan.body).toEqual({
      changes: [
        expect.objectContaining({ object_id: prompt('alpha'), action: 'create' }),
        expect.objectContaining({ object_id: prompt('beta'), action: 'create' }),
      ],
    });
    expect(
      (await other.call('POST', packages(other, '/prompts/apply'), { body: { package_version: '1.1.0' } })).status,
    ).toBe(200);
    expect((await other.call('GET', `${other.management}${prompt('alpha')}`)).body).toMatchObject({
      resource: { prefix: 'I changed.' },
    });
    // A change on the target shows as an update of that field, and apply puts it back.
    expect(
      (
        await other.call('POST', `${other.management}${prompt('beta')}`, {
          body: { name: 'beta', prefix: 'Drifted.', suffix: 'Extra.' },
        })
      ).status,
    ).toBe(200);
    const drift = await other.call('POST', packages(other, '/prompts/plan'), { body: { package_version: '1.1.0' } });
    expect((drift.body as { changes: unknown[] }).changes[1]).toEqual({
      object_id: prompt('beta'),
      action: 'update',
      fields: ['prefix', 'suffix'],
    });
    await other.call('POST', packages(other, '/prompts/apply'), { body: { package_version: '1.1.0' } });
    expect((await other.call('GET', `${other.management}${prompt('beta')}`)).body).toMatchObject({
      resource: { prefix: 'I am beta.' },
    });
  });

  it('applies a package made by hand: a manifest with a name and a version, and a JSON file per resource', async () => {
    const elsewhere = (type: string, name: string) =>
      `/instances/00000000-0000-4000-8000-000000000000/providers/${type}/${name}`;
    const bytes = await zip([
      { name: 'manifest.json', data: JSON.stringify({ name: 'handmade', version: '2.0.0' }) },
      {
        name: 'prompt.json',
        data: JSON.stringify({ type: 'Svc.Prompt/prompts', name: 'handmade-prompt', prefix: 'Made by hand.' }),
      },
      {
        name: 'workflow.json',
        data: JSON.stringify({
          type: 'workflow',
          name: 'handmade-workflow',
          workflow_type: 'chat',
          workflow_host: 'builtin',
          main_ai_model_object_id: elsewhere('Svc.AIModel/aiModels', 'm'),
          main_prompt_object_id: elsewhere('Svc.Prompt/prompts', 'handmade-prompt'),
        }),
      },
    ]);
    expect(
      (await upload('handmade', bytes, { type: 'artifact-package', name: 'handmade', package_version: '2.0.0' }))
        .status,
    ).toBe(200);
    // The model it names is on no instance yet: refused whole.
    const refused = await app.call('POST', packages(app, '/handmade/plan'), { body: { package_version: '2.0.0' } });
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body)).toContain(`/instances/${INSTANCE}/providers/Svc.AIModel/aiModels/m`);
    const endpoint = `/instances/${INSTANCE}/providers/Svc.Configuration/apiEndpointConfigurations/e`;
    expect(
      (
        await app.call('POST', `${app.management}${endpoint}`, {
          body: {
            name: 'e',
            category: 'LLM',
            provider: 'openai',
            url: 'https://models.example.com/v1',
            authentication_type: 'None',
          },
        })
      ).status,
    ).toBe(200);
    expect(
      (
        await app.call('POST', `${app.management}/instances/${INSTANCE}/providers/Svc.AIModel/aiModels/m`, {
          body: { name: 'm', model_type: 'completion', deployment_name: 'd', api_endpoint_object_id: endpoint },
        })
      ).status,
    ).toBe(200);
    const applied = await app.call('POST', packages(app, '/handmade/apply'), { body: { package_version: '2.0.0' } });
    expect(applied.body).toEqual({
      changes: [
        { object_id: prompt('handmade-prompt'), action: 'create', fields: ['name', 'prefix'] },
        {
          object_id: `/instances/${INSTANCE}/providers/Svc.Agent/workflows/handmade-workflow`,
          action: 'create',
          fields: ['main_ai_model_object_id', 'main_prompt_object_id', 'name', 'workflow_host', 'workflow_type'],
        },
      ],
    });
    expect(
      (await app.call('GET', `${app.management}/instances/${INSTANCE}/providers/Svc.Agent/workflows/handmade-workflow`))
        .body,
    ).toMatchObject({ resource: { main_prompt_object_id: prompt('handmade-prompt') } });
  });

  it('deletes and purges a package with the files of its versions', async () => {
    expect((await exportPrompts('gone', '1.0.0', ['beta'])).status).toBe(200);
    expect((await app.call('POST', packages(app, '/gone/purge'))).status).toBe(409);
    expect((await app.call('DELETE', packages(app, '/gone'))).status).toBe(200);
    expect((await app.call('GET', packages(app, '/gone'))).status).toBe(404);
    expect((await app.call('POST', packages(app, '/gone/purge'))).status).toBe(200);
    const left = [];
    for await (const blob of containerOf(app.services, store).listBlobsFlat({ prefix: 'artifacts/gone/' }))
      left.push(blob.name);
    expect(left).toEqual([]);
    expect((await exportPrompts('gone', '1.0.0', ['beta'])).status).toBe(200);
  });
});
