// Bodies the stores could not hold, or would hold changed, are refused with a 400 and nothing stored; plugin
// package versions are semantic versions, a failed upload never blocks its version, and packages have the
// lifecycle every resource has (delete, then purge).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../support/app.js';
import { echo, python, zip, manifest } from '../../support/packages.js';
import { INSTANCE } from '../../support/services.js';
import { containerOf } from '../../support/storage.js';

describe('hostile bodies', () => {
  let app: TestApp;
  const core = (path: string) => `${app.core}/instances/${INSTANCE}${path}`;
  const packages = (path: string, query = '') =>
    `${app.management}/instances/${INSTANCE}/providers/Svc.Platform/${path}?api-version=2024-02-16${query}`;
  const raw = async (url: string, body: string | Buffer, type = 'application/json') => {
    const r = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${await app.token()}`, 'content-type': type },
      body: typeof body === 'string' ? body : new Uint8Array(body),
    });
    return { status: r.status, body: (await r.json()) as Record<string, unknown> };
  };
  const sessions = async () => ((await app.call('GET', core('/sessions'))).body as unknown[]).length;
  const upload = async (pkg: string, bytes: Buffer, version: string, name = 'hard') => {
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(bytes)]), `${pkg}.zip`);
    form.append(
      'resource',
      JSON.stringify({ type: 'plugin-package', name, package_runtime: 'Python', package_version: version }),
    );
    const r = await fetch(packages(`pluginPackages/${pkg}`), {
      method: 'POST',
      body: form,
      headers: { authorization: `Bearer ${await app.token()}` },
    });
    return { status: r.status, body: (await r.json()) as Record<string, unknown> };
  };
  const blobs = async (prefix: string) => {
    const names: string[] = [];
    const container = containerOf(app.services, app.services.config.packages.container);
    await container.createIfNotExists();
    for await (const b of container.listBlobsFlat({ prefix })) names.push(b.name);
    return names;
  };

  beforeAll(async () => {
    app = await startTestApp({ PACKAGES_CONTAINER: `pkgs-${randomUUID().slice(0, 8)}` });
  });
  afterAll(() => app.close());

  it(
    'refuses invalid UTF-8, lone surrogates, JSON deeper than the stores hold and JSON not sent as JSON; ' +
      'nothing is stored',
    async () => {
      const before = await sessions();
      const invalidUtf8 = Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('"}')]);
      expect(await raw(core('/sessions'), invalidUtf8)).toMatchObject({
        status: 400,
        body: { error: { code: 'ValidationError', message: 'Request body is not valid UTF-8' } },
      });
      expect(await raw(core('/sessions'), '{"name":"\\ud800"}')).toMatchObject({
        status: 400,
        body: { error: { code: 'ValidationError' } },
      });
      // Malformed JSON on the Core API: the validation error body, with details.
      for (const malformed of ['{"name":', '{name: 1}', 'nul', '[1,']) {
        expect(await raw(core('/sessions'), malformed), malformed).toMatchObject({
          status: 400,
          body: { error: { code: 'ValidationError', details: [{ message: expect.any(String) as string }] } },
        });
      }
      expect(await raw(core('/sessions'), '{"name":"ok"}', 'text/plain')).toMatchObject({
        status: 415,
        body: { error: { code: 'UnsupportedMediaType' } },
      });
      expect(await raw(core('/sessions'), '{"name":"ok"}', 'application/json; charset=latin1')).toMatchObject({
        status: 415,
      });
      expect(await sessions()).toBe(before);
      const source = `/instances/${INSTANCE}/providers/Svc.DataSource/dataSources/d`;
      const nested = `${'['.repeat(2000)}${']'.repeat(2000)}`;
      const deep =
        `{"name":"p","data_source_object_id":"${source}",` +
        `"stages":[{"name":"s","plugin_object_id":"p","parameters":{"x":${nested}}}]}`;
      const r = await raw(`${app.management}/instances/${INSTANCE}/providers/Svc.DataPipeline/dataPipelines/p`, deep);
      expect(r).toMatchObject({
        status: 400,
        body: { error: { code: 'BadRequest', message: expect.stringContaining('deeper than 64') as string } },
      });
      expect(
        (await app.call('GET', `${app.management}/instances/${INSTANCE}/providers/Svc.DataPipeline/dataPipelines/p`))
          .status,
      ).toBe(404);
    },
  );

  it('accepts only semantic versions, so `.` and `..` never reach a blob path', async () => {
    for (const version of ['.', '..', '1.0', 'v1.0.0', '../../x', '1.0.0/..']) {
      const bytes = await python(version, [echo], 'hard');
      expect((await upload('Python-hard', bytes, version)).status, version).toBe(400);
    }
    expect(await blobs('Python-hard/')).toEqual([]);
  });

  it(
    'never lets a failed upload block its version: a manifest that fails late, and a lost race, leave no blob ' +
      'behind',
    async () => {
      const tooDeep = JSON.parse(manifest('late', '1.0.0', 'Python', [echo])) as { plugins: Record<string, unknown>[] };
      (tooDeep.plugins[0] as { parameters: unknown[] }).parameters = [
        {
          name: 'x',
          type: 'array',
          description: '',
          default_value: JSON.parse(`${'['.repeat(1500)}${']'.repeat(1500)}`) as unknown,
        },
      ];
      const bad = await zip([{ name: 'manifest.json', data: JSON.stringify(tooDeep) }]);
      expect((await upload('Python-late', bad, '1.0.0', 'late')).status).toBe(400);
      expect((await upload('Python-late', await python('1.0.0', [echo], 'late'), '1.0.0', 'late')).status).toBe(200);

      const bytes = await python('1.0.0', [echo], 'race');
      const results = await Promise.all([
        upload('Python-race', bytes, '1.0.0', 'race'),
        upload('Python-race', bytes, '1.0.0', 'race'),
        upload('Python-race', bytes, '1.0.0', 'race'),
      ]);
      expect(results.map((r) => r.status).sort()).toEqual([200, 409, 409]);
      // The blob writes of the losers were undone once their record lost.
      await new Promise((r) => setTimeout(r, 100));
      expect(await blobs('Python-race/1.0.0/')).toHaveLength(1);
    },
  );

  it('soft-deletes and purges plugin packages like every resource', async () => {
    expect((await upload('Python-gone', await python('1.0.0', [echo], 'gone'), '1.0.0', 'gone')).status).toBe(200);
    expect((await upload('Python-gone', await python('1.1.0', [echo], 'gone'), '1.1.0', 'gone')).status).toBe(200);
    expect(await blobs('Python-gone/')).toHaveLength(2);
    expect((await app.call('POST', packages('pluginPackages/Python-gone/purge'))).status).toBe(409);
    expect(await app.call('DELETE', packages('pluginPackages/Python-gone'))).toMatchObject({
      status: 200,
      body: { object_id: `/instances/${INSTANCE}/providers/Svc.Platform/pluginPackages/Python-gone`, deleted: true },
    });
    expect((await app.call('GET', packages('pluginPackages/Python-gone'))).status).toBe(404);
    expect(((await app.call('GET', packages('plugins'))).body as { name: string }[]).map((p) => p.name)).not.toContain(
      'Python-gone-echo',
    );
    expect((await upload('Python-gone', await python('2.0.0', [echo], 'gone'), '2.0.0', 'gone')).status).toBe(409);
    expect(await app.call('POST', packages('pluginPackages/Python-gone/purge'))).toMatchObject({
      status: 200,
      body: { is_success: true },
    });
    expect(await blobs('Python-gone/')).toEqual([]);
    expect((await upload('Python-gone', await python('2.0.0', [echo], 'gone'), '2.0.0', 'gone')).status).toBe(200);
  });
});
