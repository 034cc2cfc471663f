// Plugin packages over HTTP with real ZIP (and NuGet) archives built in memory: upload, versions, download,
// stores, plugins, filters, and hostile archives rejected with nothing stored.
import { randomUUID } from 'node:crypto';
import { ContainerSASPermissions } from '@azure/storage-blob';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oidForUpn } from '../../../shared/auth/local-idp.js';
import { ROLE_IDS, roleDefinitionPath } from '../../../shared/providers/types/roles.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { INSTANCE } from '../../support/services.js';
import { echo, manifest, python, rename, uploadPackage, zip } from '../../support/packages.js';
import { containerOf } from '../../support/storage.js';

describe('plugin packages', () => {
  let app: TestApp;
  const url = (path: string, query = '') =>
    `${app.management}/instances/${INSTANCE}/providers/Svc.Platform/${path}?api-version=2024-02-16${query}`;
  const upload = (pkg: string, bytes: Buffer, resource: Record<string, unknown>, as?: string) =>
    uploadPackage(app, INSTANCE, pkg, bytes, resource, as);
  const resource = (version: string, extra: Record<string, unknown> = {}) => ({
    type: 'plugin-package',
    name: 'Python-acctools',
    package_runtime: 'Python',
    package_version: version,
    ...extra,
  });
  const plugins = async () =>
    (await app.call('GET', url('plugins'))).body as {
      name: string;
      category: string;
      plugin_package_object_id: string;
    }[];
  const packageNames = async () =>
    ((await app.call('GET', url('pluginPackages'))).body as { resource: { name: string } }[]).map(
      (p) => p.resource.name,
    );

  beforeAll(async () => {
    app = await startTestApp({ PACKAGE_STORE_PRIVATE_CONTAINER: `private-${randomUUID().slice(0, 8)}` });
  });
  afterAll(() => app.close());

  it('round-trips a Python package: upload, list, plugins, filter, download identical bytes', async () => {
    const bytes = await python('1.0.0');
    const r = await upload('Python-acctools', bytes, resource('1.0.0'));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({
      object_id: `/instances/${INSTANCE}/providers/Svc.Platform/pluginPackages/Python-acctools`,
      is_success: true,
      resource: { current_version: '1.0.0', plugins: ['echo', 'planner'] },
    });
    expect(await packageNames()).toContain('Python-acctools');
    // The built-in plugins come first (every category the service runs), then the packages'.
    const all = await plugins();
    const builtin = all.filter(
      (p) =>
        p.plugin_package_object_id === `/instances/${INSTANCE}/providers/Svc.Platform/pluginPackages/Dotnet-Builtin`,
    );
    expect(all.slice(0, builtin.length)).toEqual(builtin);
    expect(builtin.filter((p) => p.category === 'Shielding').map((p) => p.name)).toEqual([
      'Dotnet-Builtin-Blocklist',
      'Dotnet-Builtin-PromptShield',
    ]);
    const listed = all.slice(builtin.length);
    expect(listed.map((p) => p.name).sort()).toEqual(['Python-acctools-echo', 'Python-acctools-planner']);
    expect(listed[0]?.plugin_package_object_id).toBe(
      `/instances/${INSTANCE}/providers/Svc.Platform/pluginPackages/Python-acctools`,
    );
    const plannerPlugin = listed.find((p) => p.name === 'Python-acctools-planner');
    expect(plannerPlugin).toMatchObject({
      type: 'plugin',
      category: 'agent workflow',
      parameter_selection_hints: {
        main_model: { resourcePath: 'Svc.AIModel/aiModels', filterActionPayload: { Category: 'LLM' } },
      },
      dependencies: [{ selection_type: 'Single' }],
    });
    const tools = await app.call('POST', url('plugins/filter'), { body: { categories: ['agent tool'] } });
    expect((tools.body as { name: string }[]).map((p) => p.name)).toEqual(['Python-acctools-echo']);
    expect(await app.call('POST', url('plugins/filter'), { body: { categories: ['Agent Tool'] } })).toMatchObject({
      status: 200,
      body: [],
    });
    const download = await fetch(url('pluginPackages/Python-acctools', '&loadContent=true'), {
      headers: { authorization: `Bearer ${await app.token()}` },
    });
    expect(download.status).toBe(200);
    expect(download.headers.get('content-type')).toBe('application/zip');
    expect(Buffer.from(await download.arrayBuffer()).equals(bytes)).toBe(true);
  });

  it('keeps versions: a new one replaces the plugin list, older ones stay downloadable, a repeat is 409', async () => {
    const v1 = await python('2.0.0', [echo], 'versions');
    expect((await upload('Python-versions', v1, resource('2.0.0', { name: 'versions' }))).status).toBe(200);
    const v2 = await python('2.1.0', [{ ...echo, name: 'shout', display_name: 'Shout' }], 'versions');
    expect((await upload('Python-versions', v2, resource('2.1.0', { name: 'versions' }))).status).toBe(200);
    const names = (await plugins()).map((p) => p.name);
    expect(names).toContain('Python-versions-shout');
    expect(names).not.toContain('Python-versions-echo');
    const old = await fetch(url('pluginPackages/Python-versions', '&loadContent=true&version=2.0.0'), {
      headers: { authorization: `Bearer ${await app.token()}` },
    });
    expect(Buffer.from(await old.arrayBuffer()).equals(v1)).toBe(true);
    expect(old.headers.get('x-package-version')).toBe('2.0.0');
    const again = await upload('Python-versions', v1, resource('2.0.0', { name: 'versions' }));
    expect(again.status).toBe(409);
    const got = await app.call('GET', url('pluginPackages/Python-versions'));
    expect(got.body).toMatchObject({
      resource: { current_version: '2.1.0', versions: [{ package_version: '2.0.0' }, { package_version: '2.1.0' }] },
    });
  });

  it('accepts a Dotnet NuGet package with its dependencies file, and enforces categories per runtime', async () => {
    const nupkg = await zip([
      {
        name: 'Acme.Shields.nuspec',
        data: '<package><metadata><id>Acme.Shields</id><version>1.0.0</version></metadata></package>',
      },
      { name: 'lib/net8.0/Acme.Shields.deps.json', data: '{"runtimeTarget":{"name":".NETCoreApp,Version=v8.0"}}' },
      { name: 'lib/net8.0/Acme.Shields.dll', data: Buffer.from([0x4d, 0x5a, 0x90, 0x00]) },
      {
        name: 'manifest.json',
        data: manifest('shields', '1.0.0', 'Dotnet', [
          { name: 'prompt-shield', category: 'Shielding' },
          { name: 'blob', category: 'Data Source' },
        ]),
      },
    ]);
    const r = await upload('Dotnet-shields', nupkg, {
      type: 'plugin-package',
      name: 'shields',
      package_runtime: 'Dotnet',
      package_version: '1.0.0',
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(
      (
        (await app.call('POST', url('plugins/filter'), { body: { categories: ['Shielding', 'Data Source'] } }))
          .body as { name: string }[]
      ).map((p) => p.name),
    ).toEqual([
      'Dotnet-Builtin-AzureBlobDataSource',
      'Dotnet-Builtin-WebDataSource',
      'Dotnet-Builtin-SharePointOnlineDataSource',
      'Dotnet-Builtin-AzureDataLakeDataSource',
      'Dotnet-Builtin-Blocklist',
      'Dotnet-Builtin-PromptShield',
      'Dotnet-shields-prompt-shield',
      'Dotnet-shields-blob',
    ]);
    const download = await fetch(url('pluginPackages/Dotnet-shields', '&loadContent=true'), {
      headers: { authorization: `Bearer ${await app.token()}` },
    });
    expect(download.headers.get('content-type')).toBe('application/octet-stream');

    const noDeps = await zip([
      { name: 'manifest.json', data: manifest('nodeps', '1.0.0', 'Dotnet', [{ name: 'x', category: 'Shielding' }]) },
    ]);
    expect(
      (
        await upload('Dotnet-nodeps', noDeps, {
          type: 'plugin-package',
          name: 'nodeps',
          package_runtime: 'Dotnet',
          package_version: '1.0.0',
        })
      ).status,
    ).toBe(400);
    const pythonShield = await python('1.0.0', [{ name: 'guard', category: 'Shielding' }], 'guard');
    const refused = await upload('Python-guard', pythonShield, resource('1.0.0', { name: 'guard' }));
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body)).toContain('Shielding is not a Python category');
  });

  it('rejects names that do not match, in the path or inside the package', async () => {
    const bytes = await python('1.0.0', [echo], 'inside');
    const mismatch = await upload('Python-outside', bytes, resource('1.0.0', { name: 'outside' }));
    expect(mismatch).toMatchObject({
      status: 400,
      body: { error: { message: expect.stringContaining('declares inside') as string } },
    });
    expect((await upload('Python-path', bytes, resource('1.0.0', { name: 'inside' }))).status).toBe(400);
    expect((await upload('Python-inside', bytes, resource('9.9.9', { name: 'inside' }))).status).toBe(400);
    expect((await upload('Python-bad.name', bytes, resource('1.0.0', { name: 'bad.name' }))).status).toBe(400);
    expect(
      (
        await upload('Python-inside', bytes, {
          type: 'plugin',
          name: 'inside',
          package_runtime: 'Python',
          package_version: '1.0.0',
        })
      ).status,
    ).toBe(400);
    expect(await packageNames()).not.toContain('Python-outside');
    // The body names the package as the path does; another full name, or another runtime, is refused.
    const named = await upload('Python-inside', bytes, resource('1.0.0', { name: 'Python-other' }));
    expect(named).toMatchObject({
      status: 400,
      body: { error: { code: 'BadRequest', message: 'name: must equal the package name in the path (Python-inside)' } },
    });
    expect((await upload('Dotnet-inside', bytes, resource('1.0.0', { name: 'Dotnet-inside' }))).status).toBe(400);
  });

  it('takes the full name in the body (the bare one too), and a bare or full name in the manifest', async () => {
    const full = await upload(
      'Python-fullname',
      await python('1.0.0', [echo], 'Python-fullname'),
      resource('1.0.0', { name: 'Python-fullname' }),
    );
    expect(full.status, JSON.stringify(full.body)).toBe(200);
    const bare = await upload(
      'Python-fullname',
      await python('1.1.0', [echo], 'fullname'),
      resource('1.1.0', { name: 'fullname' }),
    );
    expect(bare.status, JSON.stringify(bare.body)).toBe(200);
    expect((await plugins()).map((p) => p.name)).toContain('Python-fullname-echo');
    const got = await app.call('GET', url('pluginPackages/Python-fullname'));
    expect(got.body).toMatchObject({ resource: { name: 'Python-fullname', current_version: '1.1.0' } });
  });

  describe('hostile archives are rejected with 400 and nothing is stored', () => {
    const good = () => ({ name: 'manifest.json', data: manifest('hostile', '1.0.0', 'Python', [echo]) });
    const cases: [string, () => Promise<Buffer>][] = [
      [
        'zip slip',
        async () => rename(await zip([good(), { name: 'aa/evil.txt', data: 'x' }]), 'aa/evil.txt', '../evil.txt'),
      ],
      [
        'absolute path',
        async () => rename(await zip([good(), { name: 'xetc/passwd', data: 'x' }]), 'xetc/passwd', '/etc/passwd'),
      ],
      ['symlink', () => zip([good(), { name: 'link', data: '/etc/passwd', mode: 0o120777 }])],
      [
        '10,000 entries',
        () =>
          zip([good(), ...Array.from({ length: 10_000 }, (_, i) => ({ name: `f/${i}`, data: '', compress: false }))]),
      ],
      ['high-ratio bomb', () => zip([good(), { name: 'bomb.bin', data: Buffer.alloc(20 * 1024 * 1024) }])],
      ['not a zip at all', () => Promise.resolve(Buffer.from('this is not an archive'))],
    ];
    it.each(cases)('%s', async (_name, build) => {
      const r = await upload('Python-hostile', await build(), resource('1.0.0', { name: 'hostile' }));
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({
        error: { code: 'BadRequest', message: expect.stringContaining('Invalid package archive') as string },
      });
      expect(await packageNames()).not.toContain('Python-hostile');
      const stored = [];
      for await (const blob of containerOf(app.services, app.services.config.packages.container).listBlobsFlat({
        prefix: 'Python-hostile/',
      }))
        stored.push(blob.name);
      expect(stored).toEqual([]);
    });
  });

  it('deploys versions from the Private and Public stores, and validates them', async () => {
    const privateStore = containerOf(app.services, app.env.PACKAGE_STORE_PRIVATE_CONTAINER!);
    await privateStore.createIfNotExists();
    const bytes = await python('3.0.0', [echo], 'stored');
    await privateStore.getBlockBlobClient('Python-stored/3.0.0/Python-stored.zip').uploadData(bytes);
    expect(
      (await app.call('POST', url('pluginPackages/validate'), { body: { packageStoreType: 'Private' } })).body,
    ).toMatchObject({
      configured: true,
      reachable: true,
      readable: true,
      package_count: 1,
      packages: ['Python-stored/3.0.0/Python-stored.zip'],
    });
    const deployed = await app.call('POST', url('pluginPackages/Python-stored'), {
      body: resource('3.0.0', { name: 'stored', package_store_type: 'Private' }),
    });
    expect(deployed).toMatchObject({ status: 200, body: { resource: { current_version: '3.0.0' } } });
    expect(
      (
        await app.call('POST', url('pluginPackages/Python-stored'), {
          body: resource('4.0.0', { name: 'stored', package_store_type: 'Private' }),
        })
      ).status,
    ).toBe(404);
    expect(
      (await app.call('POST', url('pluginPackages/validate'), { body: { packageStoreType: 'Public' } })).body,
    ).toMatchObject({ configured: false });

    // A vendor store reached by URL (a read-only SAS), as the Public store is configured.
    const vendor = containerOf(app.services, `vendor-${randomUUID().slice(0, 8)}`);
    await vendor.create();
    await vendor
      .getBlockBlobClient('Python-vendor/1.0.0/Python-vendor.zip')
      .uploadData(await python('1.0.0', [echo], 'vendor'));
    const sas = await vendor.generateSasUrl({
      permissions: ContainerSASPermissions.parse('rl'),
      expiresOn: new Date(Date.now() + 3_600_000),
    });
    const withPublic = await startTestApp({ PACKAGE_STORE_PUBLIC_URL: sas });
    const packages = `${withPublic.management}/instances/${INSTANCE}/providers/Svc.Platform/pluginPackages`;
    try {
      const validated = await withPublic.call('POST', `${packages}/validate?api-version=2024-02-16`, {
        body: { packageStoreType: 'Public' },
      });
      expect(validated.body).toMatchObject({ configured: true, reachable: true, readable: true, package_count: 1 });
      const fromPublic = await withPublic.call('POST', `${packages}/Python-vendor?api-version=2024-02-16`, {
        body: resource('1.0.0', { name: 'vendor', package_store_type: 'Public' }),
      });
      expect(fromPublic.status).toBe(200);
    } finally {
      await withPublic.close();
    }
  });

  it('needs api-version=2024-02-16, and the right role', async () => {
    const noVersion = await app.call('GET', `${app.management}/instances/${INSTANCE}/providers/Svc.Platform/plugins`);
    expect(noVersion).toMatchObject({
      status: 400,
      body: { error: { message: expect.stringContaining('api-version') as string } },
    });
    expect(
      (
        await app.call(
          'GET',
          `${app.management}/instances/${INSTANCE}/providers/Svc.Platform/plugins?api-version=2023-01-01`,
        )
      ).status,
    ).toBe(400);
    const reader = 'plugin-reader@example.com';
    const name = randomUUID();
    await app.call(
      'POST',
      `${app.management}/instances/${INSTANCE}/providers/Svc.Authorization/roleAssignments/${name}`,
      {
        body: {
          name,
          principal_id: oidForUpn(reader),
          principal_type: 'User',
          role_definition_id: roleDefinitionPath(ROLE_IDS.reader),
          scope: `/instances/${INSTANCE}`,
        },
      },
    );
    expect((await app.call('GET', url('plugins'), { as: reader })).status).toBe(200);
    expect(
      (
        await upload(
          'Python-readers',
          await python('1.0.0', [echo], 'readers'),
          resource('1.0.0', { name: 'readers' }),
          reader,
        )
      ).status,
    ).toBe(403);
    expect((await app.call('GET', url('plugins'), { as: 'nobody@example.com' })).status).toBe(403);
  });
});
