// File upload over HTTP: streamed to Blob storage (Azurite), sniffed content types, the size limit, the
// file record, ownership of attachments, and text files handed to the model.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FileDoc } from '../../../shared/files/files.js';
import { startMockLlm, type MockLlm } from '../../../scripts/mock-llm.js';
import { seedAgent } from '../../support/agents.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { INSTANCE } from '../../support/services.js';

const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8ffff3f0005fe02fea7d6a4c40000000049454e44ae426082', 'hex');

describe('file upload', () => {
  let app: TestApp;
  let llm: MockLlm;
  const upload = async (parts: { file?: { bytes: Buffer; name: string; type?: string }; agent_name?: string; session_id?: string }, as?: string) => {
    const form = new FormData();
    if (parts.file) form.append('file', new Blob([new Uint8Array(parts.file.bytes)], parts.file.type ? { type: parts.file.type } : {}), parts.file.name);
    if (parts.agent_name) form.append('agent_name', parts.agent_name);
    if (parts.session_id) form.append('session_id', parts.session_id);
    const res = await fetch(`${app.core}/instances/${INSTANCE}/files/upload`, { method: 'POST', body: form, headers: { authorization: `Bearer ${await app.token(as)}` } });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const records = () => app.services.store.container<FileDoc>('files');

  beforeAll(async () => {
    llm = await startMockLlm();
    app = await startTestApp({ MAX_UPLOAD_BYTES: String(64 * 1024) });
    await seedAgent(app, 'reader', { llmUrl: llm.url });
  });
  afterAll(async () => {
    await app.close();
    await llm.close();
  });

  it('stores a text file, detects its type from the bytes, and keeps a record', async () => {
    const session = ((await app.call('POST', `${app.core}/instances/${INSTANCE}/sessions`, { body: { name: 'files' } })).body as { id: string }).id;
    const text = '# Notes\nThe launch code is 4242.\n';
    const r = await upload({ file: { bytes: Buffer.from(text), name: 'notes.md' }, agent_name: 'reader', session_id: session });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ object_id: expect.stringMatching(new RegExp(`^/instances/${INSTANCE}/files/[0-9a-f-]{36}$`)) as string, display_name: 'notes.md', content_type: 'text/markdown' });
    const id = String(r.body.object_id).split('/').pop()!;
    const record = await records().read('owner@local.test', id);
    expect(record).toMatchObject({ upn: 'owner@local.test', agent_name: 'reader', session_id: session, size: Buffer.byteLength(text), content_type: 'text/markdown' });
    const blob = await app.services.blobs.getContainerClient('files').getBlockBlobClient(record!.blob_name).downloadToBuffer();
    expect(blob.toString()).toBe(text);
  });

  it('trusts the bytes over a wrong declared type', async () => {
    const png = await upload({ file: { bytes: PNG, name: 'picture.txt', type: 'text/plain' }, agent_name: 'reader' });
    expect(png.body.content_type).toBe('image/png');
    const binary = await upload({ file: { bytes: Buffer.from([0, 1, 2, 3, 255, 254]), name: 'data.bin' }, agent_name: 'reader' });
    expect(binary.body.content_type).toBe('application/octet-stream');
  });

  it('refuses files over the limit with 413 and keeps nothing', async () => {
    const before = (await records().query({ partition: 'owner@local.test' })).items.length;
    const r = await upload({ file: { bytes: Buffer.alloc(65 * 1024, 'a'), name: 'big.txt' }, agent_name: 'reader' });
    expect(r.status).toBe(413);
    expect((await records().query({ partition: 'owner@local.test' })).items.length).toBe(before);
  });

  it('requires a file and an agent the caller may use, and a session of its own', async () => {
    const before = (await records().query({})).items.length;
    expect(await upload({ agent_name: 'reader' })).toMatchObject({ status: 400, body: { error: { details: [{ field: 'file' }] } } });
    expect(await upload({ file: { bytes: Buffer.from('x'), name: 'x.txt' } })).toMatchObject({ status: 400, body: { error: { details: [{ field: 'agent_name' }] } } });
    expect((await upload({ file: { bytes: Buffer.from('x'), name: 'x.txt' }, agent_name: 'reader' }, 'stranger@example.com')).status).toBe(403);
    expect((await upload({ file: { bytes: Buffer.from('x'), name: 'x.txt' }, agent_name: 'reader', session_id: 'bad' })).status).toBe(400);
    expect((await upload({ file: { bytes: Buffer.from('x'), name: 'x.txt' }, agent_name: 'reader', session_id: '11111111-1111-4111-8111-111111111111' })).status).toBe(404);
    expect((await records().query({})).items.length).toBe(before);
    const notMultipart = await app.call('POST', `${app.core}/instances/${INSTANCE}/files/upload`, { body: { file: 'x' } });
    expect(notMultipart.status).toBe(400);
  });

  it('gives attached text files to the model, and only the owner may attach them', async () => {
    const r = await upload({ file: { bytes: Buffer.from('The launch code is 4242.'), name: 'code.txt' }, agent_name: 'reader' });
    const objectId = String(r.body.object_id);
    const answer = await app.call('POST', `${app.core}/instances/${INSTANCE}/completions`, { body: { user_prompt: 'What is the code?', agent_name: 'reader', attachments: [objectId] } });
    expect(answer.status).toBe(200);
    expect(llm.requests.at(-1)?.body.messages.at(-1)?.content).toBe('Attached file "code.txt":\nThe launch code is 4242.\n\nWhat is the code?');
    const someoneElse = await app.call('POST', `${app.core}/instances/${INSTANCE}/completions`, { as: 'owner@local.test', body: { user_prompt: 'x', agent_name: 'reader', attachments: [`/instances/${INSTANCE}/files/00000000-0000-4000-8000-000000000000`] } });
    expect(someoneElse.status).toBe(404);
  });
});
