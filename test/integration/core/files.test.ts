// Files over HTTP: upload streamed to Blob storage (Azurite), sniffed content types, the size limit, the
// file record, ownership of attachments, text files handed to the model; then the caller's own files:
// list, metadata, content and delete.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockLlm, type MockLlm } from '../../../scripts/mock-llm.js';
import { grantReader, seedAgent } from '../../support/agents.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { INSTANCE } from '../../support/services.js';
import { containerOf } from '../../support/storage.js';

const PNG = Buffer.from(
  '89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489' +
    '0000000d4944415478da63f8ffff3f0005fe02fea7d6a4c40000000049454e44ae426082',
  'hex',
);

describe('file upload', () => {
  let app: TestApp;
  let llm: MockLlm;
  const upload = async (
    parts: { file?: { bytes: Buffer; name: string; type?: string }; agent_name?: string; session_id?: string },
    as?: string,
  ) => {
    const form = new FormData();
    if (parts.file)
      form.append(
        'file',
        new Blob([new Uint8Array(parts.file.bytes)], parts.file.type ? { type: parts.file.type } : {}),
        parts.file.name,
      );
    if (parts.agent_name) form.append('agent_name', parts.agent_name);
    if (parts.session_id) form.append('session_id', parts.session_id);
    const res = await fetch(`${app.core}/instances/${INSTANCE}/files/upload`, {
      method: 'POST',
      body: form,
      headers: { authorization: `Bearer ${await app.token(as)}` },
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const records = () => app.services.store.container('files');

  beforeAll(async () => {
    llm = await startMockLlm();
    app = await startTestApp({ MAX_UPLOAD_BYTES: String(64 * 1024), USER_STORAGE_MAX_BYTES: String(160 * 1024) });
    await seedAgent(app, 'reader', { llmUrl: llm.url });
  });
  afterAll(async () => {
    await app.close();
    await llm.close();
  });

  it('stores a text file, detects its type from the bytes, and keeps a record', async () => {
    const session = (
      (await app.call('POST', `${app.core}/instances/${INSTANCE}/sessions`, { body: { name: 'files' } })).body as {
        id: string;
      }
    ).id;
    const text = '# Notes\nThe launch code is 4242.\n';
    const r = await upload({
      file: { bytes: Buffer.from(text), name: 'notes.md' },
      agent_name: 'reader',
      session_id: session,
    });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      object_id: expect.stringMatching(
        new RegExp(`^/instances/${INSTANCE}/providers/Svc.Attachment/attachments/[0-9a-f-]{36}$`),
      ) as string,
      display_name: 'notes.md',
      content_type: 'text/markdown',
    });
    const id = String(r.body.object_id).split('/').pop()!;
    const record = await records().read('owner@local.test', id);
    expect(record).toMatchObject({
      upn: 'owner@local.test',
      agent_name: 'reader',
      session_id: session,
      size: Buffer.byteLength(text),
      content_type: 'text/markdown',
    });
    const blob = await containerOf(app.services, 'files').getBlockBlobClient(record!.blob_name).downloadToBuffer();
    expect(blob.toString()).toBe(text);
  });

  it('trusts the bytes over a wrong declared type', async () => {
    const png = await upload({ file: { bytes: PNG, name: 'picture.txt', type: 'text/plain' }, agent_name: 'reader' });
    expect(png.body.content_type).toBe('image/png');
    const binary = await upload({
      file: { bytes: Buffer.from([0, 1, 2, 3, 255, 254]), name: 'data.bin' },
      agent_name: 'reader',
    });
    expect(binary.body.content_type).toBe('application/octet-stream');
  });

  it('refuses files over the limit with 413 and keeps nothing', async () => {
    const before = (await records().query({ partition: 'owner@local.test' })).items.length;
    const r = await upload({ file: { bytes: Buffer.alloc(65 * 1024, 'a'), name: 'big.txt' }, agent_name: 'reader' });
    expect(r.status).toBe(413);
    expect((await records().query({ partition: 'owner@local.test' })).items.length).toBe(before);
  });

  it(
    "holds each user's files to USER_STORAGE_MAX_BYTES in all, refused with 413 and nothing kept; others upload " +
      'on',
    async () => {
      const as = 'hoarder@example.com';
      await grantReader(app, as, 'reader');
      const part = { bytes: Buffer.alloc(60 * 1024, 'h'), name: 'part.txt' };
      const kept = [
        await upload({ file: part, agent_name: 'reader' }, as),
        await upload({ file: part, agent_name: 'reader' }, as),
      ];
      expect(kept.map((r) => r.status)).toEqual([200, 200]);
      const refused = await upload({ file: part, agent_name: 'reader' }, as);
      expect(refused.status).toBe(413);
      expect(refused.body).toMatchObject({ error: { code: 'StorageQuotaExceeded' } });
      expect((await records().query({ partition: as })).items).toHaveLength(2);
      // The bound is one user's: another still has room, and the hoarder has again once a file is deleted.
      expect((await upload({ file: part, agent_name: 'reader' })).status).toBe(200);
      const first = String(kept[0]?.body.object_id).split('/').pop();
      expect((await app.call('DELETE', `${app.core}/instances/${INSTANCE}/files/${first}`, { as })).status).toBe(204);
      expect((await upload({ file: part, agent_name: 'reader' }, as)).status).toBe(200);
    },
  );

  it('requires a file and an agent the caller may use, and a session of its own', async () => {
    const before = (await records().query({})).items.length;
    expect(await upload({ agent_name: 'reader' })).toMatchObject({
      status: 400,
      body: { error: { details: [{ field: 'file' }] } },
    });
    expect(await upload({ file: { bytes: Buffer.from('x'), name: 'x.txt' } })).toMatchObject({
      status: 400,
      body: { error: { details: [{ field: 'agent_name' }] } },
    });
    expect(
      (await upload({ file: { bytes: Buffer.from('x'), name: 'x.txt' }, agent_name: 'reader' }, 'stranger@example.com'))
        .status,
    ).toBe(403);
    expect(
      (await upload({ file: { bytes: Buffer.from('x'), name: 'x.txt' }, agent_name: 'reader', session_id: 'bad' }))
        .status,
    ).toBe(400);
    expect(
      (
        await upload({
          file: { bytes: Buffer.from('x'), name: 'x.txt' },
          agent_name: 'reader',
          session_id: '11111111-1111-4111-8111-111111111111',
        })
      ).status,
    ).toBe(404);
    expect((await records().query({})).items.length).toBe(before);
    const notMultipart = await app.call('POST', `${app.core}/instances/${INSTANCE}/files/upload`, {
      body: { file: 'x' },
    });
    expect(notMultipart.status).toBe(400);
  });

  it('gives attached text files to the model, and only the owner may attach them', async () => {
    const r = await upload({
      file: { bytes: Buffer.from('The launch code is 4242.'), name: 'code.txt' },
      agent_name: 'reader',
    });
    const objectId = String(r.body.object_id);
    const answer = await app.call('POST', `${app.core}/instances/${INSTANCE}/completions`, {
      body: { user_prompt: 'What is the code?', agent_name: 'reader', attachments: [objectId] },
    });
    expect(answer.status).toBe(200);
    expect(llm.requests.at(-1)?.body.messages.at(-1)?.content).toBe(
      'Attached file "code.txt":\nThe launch code is 4242.\n\nWhat is the code?',
    );
    // The first release's object id form still works.
    const old = objectId.replace('/providers/Svc.Attachment/attachments/', '/files/');
    expect(
      (
        await app.call('POST', `${app.core}/instances/${INSTANCE}/completions`, {
          body: { user_prompt: 'Again?', agent_name: 'reader', attachments: [old] },
        })
      ).status,
    ).toBe(200);
    expect(llm.requests.at(-1)?.body.messages.at(-1)?.content).toContain('The launch code is 4242.');

    // Unknown, malformed or someone else's: 400 ValidationError, before anything runs or is queued.
    await seedAgent(app, 'reader2', { llmUrl: llm.url });
    await grantReader(app, 'other@example.com', 'reader2');
    const calls = llm.requests.length;
    for (const path of ['/completions', '/async-completions']) {
      for (const [as, attachment] of [
        [
          'owner@local.test',
          `/instances/${INSTANCE}/providers/Svc.Attachment/attachments/00000000-0000-4000-8000-000000000000`,
        ],
        ['owner@local.test', 'not-an-object-id'],
        ['other@example.com', objectId],
      ] as const) {
        const agent = as === 'owner@local.test' ? 'reader' : 'reader2';
        const refused = await app.call('POST', `${app.core}/instances/${INSTANCE}${path}`, {
          as,
          body: { user_prompt: 'x', agent_name: agent, attachments: [attachment], operation_id: 'op-attach' },
        });
        expect(refused.status, `${path} ${as} ${attachment}`).toBe(400);
        expect(refused.body).toMatchObject({
          error: {
            code: 'ValidationError',
            details: [{ field: 'attachments', message: `Attachment ${attachment} not found` }],
          },
        });
      }
    }
    expect(llm.requests.length).toBe(calls);
    expect((await app.call('GET', `${app.core}/instances/${INSTANCE}/async-completions/op-attach/status`)).status).toBe(
      404,
    );

    // A record whose blob is gone (deleted out of band): refused the same way, not a 500.
    const gone = await upload({ file: { bytes: Buffer.from('soon gone'), name: 'gone.txt' }, agent_name: 'reader' });
    const record = await records().read('owner@local.test', String(gone.body.object_id).split('/').pop()!);
    await containerOf(app.services, 'files').getBlockBlobClient(record!.blob_name).delete();
    const refused = await app.call('POST', `${app.core}/instances/${INSTANCE}/completions`, {
      body: { user_prompt: 'x', agent_name: 'reader', attachments: [String(gone.body.object_id)] },
    });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({
      error: { code: 'ValidationError', details: [{ field: 'attachments', message: 'Attachment gone.txt not found' }] },
    });
    expect(llm.requests.length).toBe(calls);
  });

  describe("the caller's files", () => {
    const files = (path = '', as?: string) =>
      app.call('GET', `${app.core}/instances/${INSTANCE}/files${path}`, as ? { as } : {});
    const idOf = (objectId: unknown) => String(objectId).split('/').pop()!;

    it('lists them newest first, gives metadata and content, and deletes a file with its blob', async () => {
      const as = 'lister@example.com';
      await seedAgent(app, 'lister-agent', { llmUrl: llm.url });
      await grantReader(app, as, 'lister-agent');
      const session = (
        (await app.call('POST', `${app.core}/instances/${INSTANCE}/sessions`, { as, body: { name: 'f' } })).body as {
          id: string;
        }
      ).id;
      const first = await upload(
        {
          file: { bytes: Buffer.from('first file'), name: 'first.txt' },
          agent_name: 'lister-agent',
          session_id: session,
        },
        as,
      );
      const second = await upload({ file: { bytes: PNG, name: 'pixel.png' }, agent_name: 'lister-agent' }, as);

      const listed = await files('', as);
      expect(listed.status).toBe(200);
      expect(listed.headers.get('x-continuation-token')).toBeNull();
      expect(listed.body).toEqual([
        {
          object_id: second.body.object_id,
          display_name: 'pixel.png',
          content_type: 'image/png',
          size_bytes: PNG.length,
          created_on: expect.any(String) as string,
          session_id: null,
        },
        {
          object_id: first.body.object_id,
          display_name: 'first.txt',
          content_type: 'text/plain',
          size_bytes: 10,
          created_on: expect.any(String) as string,
          session_id: session,
        },
      ]);

      const id = idOf(first.body.object_id);
      expect((await files(`/${id}`, as)).body).toMatchObject({
        object_id: first.body.object_id,
        display_name: 'first.txt',
        size_bytes: 10,
        session_id: session,
      });
      const content = await fetch(`${app.core}/instances/${INSTANCE}/files/${idOf(second.body.object_id)}/content`, {
        headers: { authorization: `Bearer ${await app.token(as)}` },
      });
      expect(content.status).toBe(200);
      expect(content.headers.get('content-type')).toBe('image/png');
      expect(content.headers.get('content-disposition')).toBe(
        `attachment; filename="pixel.png"; filename*=UTF-8''pixel.png`,
      );
      expect(Buffer.from(await content.arrayBuffer())).toEqual(PNG);

      // Another user sees none of it.
      expect(await files('', 'owner@local.test')).toMatchObject({ status: 200 });
      expect(
        ((await files('', 'owner@local.test')).body as { object_id: string }[]).map((f) => f.object_id),
      ).not.toContain(first.body.object_id);
      for (const path of [`/${id}`, `/${id}/content`]) expect((await files(path, 'owner@local.test')).status).toBe(404);
      expect(
        (await app.call('DELETE', `${app.core}/instances/${INSTANCE}/files/${id}`, { as: 'owner@local.test' })).status,
      ).toBe(404);

      const record = (await records().read(as, id))!;
      const deleted = await app.call('DELETE', `${app.core}/instances/${INSTANCE}/files/${id}`, { as });
      expect(deleted.status).toBe(204);
      expect(await containerOf(app.services, 'files').getBlockBlobClient(record.blob_name).exists()).toBe(false);
      expect((await files(`/${id}`, as)).status).toBe(404);
      expect((await files(`/${id}/content`, as)).status).toBe(404);
      expect(((await files('', as)).body as unknown[]).length).toBe(1);
      expect((await app.call('DELETE', `${app.core}/instances/${INSTANCE}/files/${id}`, { as })).status).toBe(404);
      // A deleted file can no longer be attached.
      const attach = await app.call('POST', `${app.core}/instances/${INSTANCE}/completions`, {
        as,
        body: { user_prompt: 'x', agent_name: 'lister-agent', attachments: [first.body.object_id] },
      });
      expect(attach.status).toBe(400);
      expect((await files('/not-a-guid', as)).status).toBe(400);
    });

    it('serves a stored HTML file as a download, never rendered in the service origin', async () => {
      const html = await upload({
        file: {
          bytes: Buffer.from('<html><script>alert(1)</script></html>'),
          name: 'naïve page.html',
          type: 'text/html',
        },
        agent_name: 'reader',
      });
      const res = await fetch(`${app.core}/instances/${INSTANCE}/files/${idOf(html.body.object_id)}/content`, {
        headers: { authorization: `Bearer ${await app.token()}` },
      });
      expect(res.headers.get('content-type')).toBe('text/html');
      expect(res.headers.get('content-disposition')).toBe(
        `attachment; filename="na_ve page.html"; filename*=UTF-8''na%C3%AFve%20page.html`,
      );
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      await res.arrayBuffer();
    });
  });
});
