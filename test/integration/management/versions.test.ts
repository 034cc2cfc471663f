// Versions of resources on both stores: every write keeps the definition it replaced, reads and restores go
// through the resource's own rights, concurrent edits lose no version, and a purge takes the versions along.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SIGNING_SECRET_SETTING } from '../../../shared/providers/settings.js';
import { grantReader } from '../../support/agents.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { INSTANCE } from '../../support/services.js';
import { STORES } from '../../support/stores.js';

interface Version {
  version: number;
  updated_on: string;
  updated_by: string;
}

describe.each(STORES)('resource versions on the $name store', (store) => {
  let app: TestApp;
  const prompts = `/instances/${INSTANCE}/providers/Svc.Prompt/prompts`;
  const url = (path = '') => `${app.management}${prompts}${path}`;
  const versions = async (name: string, as?: string) => {
    const r = await app.call('GET', url(`/${name}/versions`), as ? { as } : {});
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body as Version[];
  };
  const save = (name: string, prefix: string) => app.call('POST', url(`/${name}`), { body: { name, prefix } });

  beforeAll(async () => {
    app = await startTestApp({}, { store: await store.open() });
  });
  afterAll(() => app.close());

  it('keeps every edit; restoring the first makes it current as a new version', async () => {
    for (const prefix of ['first', 'second', 'third', 'fourth'])
      expect((await save('history', prefix)).status).toBe(200);
    const listed = await versions('history');
    expect(listed.map((v) => v.version)).toEqual([4, 3, 2, 1]);
    expect(listed.every((v) => v.updated_by.length > 0 && !Number.isNaN(Date.parse(v.updated_on)))).toBe(true);

    const first = await app.call('GET', url('/history/versions/1'));
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ resource: { name: 'history', prefix: 'first', version: 1 } });
    expect((first.body as { actions: string[] }).actions).toContain('Svc.Prompt/prompts/write');
    expect((await app.call('GET', url('/history/versions/9'))).status).toBe(404);

    const restored = await app.call('POST', url('/history/versions/1/restore'));
    expect(restored.status, JSON.stringify(restored.body)).toBe(200);
    expect(restored.body).toMatchObject({ version: 5 });
    expect((await app.call('GET', url('/history'))).body).toMatchObject({ resource: { prefix: 'first', version: 5 } });
    expect((await versions('history')).map((v) => v.version)).toEqual([5, 4, 3, 2, 1]);
    // The version restored over is kept too.
    expect((await app.call('GET', url('/history/versions/4'))).body).toMatchObject({ resource: { prefix: 'fourth' } });
  });

  it('never lists versions as resources', async () => {
    await save('listed', 'a');
    await save('listed', 'b');
    for (const query of ['', '?includeDeleted=true']) {
      const r = await app.call('GET', url(query));
      const names = (r.body as { resource: { name: string } }[]).map((e) => e.resource.name);
      expect(names.filter((n) => n === 'listed')).toHaveLength(1);
    }
  });

  it('loses no version to concurrent edits', async () => {
    await save('busy', 'start');
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => save('busy', `edit ${i}`)));
    expect(results.map((r) => r.status)).toEqual(Array(12).fill(200));
    const listed = await versions('busy');
    expect(listed.map((v) => v.version)).toEqual(Array.from({ length: 13 }, (_, i) => 13 - i));
    // Every edit is one of the versions: none was overwritten by another.
    const prefixes = new Set<string>();
    for (const v of listed)
      prefixes.add(
        ((await app.call('GET', url(`/busy/versions/${v.version}`))).body as { resource: { prefix: string } }).resource
          .prefix,
      );
    expect(prefixes.size).toBe(13);
  });

  it('lets readers read versions and only writers restore them', async () => {
    const agents = `${app.management}/instances/${INSTANCE}/providers/Svc.Agent/agents`;
    for (const description of ['one', 'two'])
      expect((await app.call('POST', `${agents}/versioned`, { body: { name: 'versioned', description } })).status).toBe(
        200,
      );
    await grantReader(app, 'reader@example.com', 'versioned');
    expect((await app.call('GET', `${agents}/versioned/versions`, { as: 'reader@example.com' })).status).toBe(200);
    expect((await app.call('GET', `${agents}/versioned/versions/1`, { as: 'reader@example.com' })).body).toMatchObject({
      resource: { description: 'one' },
    });
    expect(
      (await app.call('POST', `${agents}/versioned/versions/1/restore`, { as: 'reader@example.com' })).status,
    ).toBe(403);
    expect((await app.call('GET', `${agents}/versioned/versions`, { as: 'stranger@example.com' })).status).toBe(403);
  });

  it('keeps no secret value in a version', async () => {
    const settings = `${app.management}/instances/${INSTANCE}/providers/Svc.Configuration/appConfigurations`;
    const name = SIGNING_SECRET_SETTING;
    for (const value of ['s3cret-one-value', 's3cret-two-value'])
      expect((await app.call('POST', `${settings}/${name}`, { body: { name, key: name, value } })).status).toBe(200);
    const { items } = await app.services.store
      .container('resources')
      .query({ partition: 'Svc.Configuration/appConfigurations', where: [{ field: 'version_of', op: 'exists' }] });
    expect(items).toHaveLength(1);
    expect(JSON.stringify(items)).not.toContain('s3cret-one-value');
    const old = await app.call('GET', `${settings}/${name}/versions/1`);
    expect(JSON.stringify(old.body)).not.toContain('s3cret-one-value');
    const restore = await app.call('POST', `${settings}/${name}/versions/1/restore`);
    expect(restore.status).toBe(400);
  });

  it('purges the versions with the resource', async () => {
    await save('gone', 'a');
    await save('gone', 'b');
    expect((await app.call('DELETE', url('/gone'))).status).toBe(200);
    expect((await app.call('POST', url('/gone/versions/1/restore'))).status).toBe(409);
    expect((await app.call('POST', url('/gone/purge'))).status).toBe(200);
    expect((await app.call('GET', url('/gone/versions'))).status).toBe(404);
    await save('gone', 'again');
    expect((await versions('gone')).map((v) => v.version)).toEqual([1]);
  });
});
