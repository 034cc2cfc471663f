// Uploaded files: bytes streamed to Blob storage, a record per file (owner, agent, session, size, type),
// and the text extracted from a file the first time it is attached, kept beside its bytes.
import { createHash, randomUUID } from 'node:crypto';
import { Transform, type Readable } from 'node:stream';
import { fileTypeFromBuffer } from 'file-type';
import { ownerKey } from '../auth/principal.js';
import { badRequest, DomainError, notFound, payloadTooLarge, statusCodeOf, validationError } from '../errors.js';
import type { Container, Doc, Page } from '../store/types.js';
import { dayOf } from '../conversations/conversations.js';
import type { BlobContainer } from '../store/storage.js';
import { z } from 'zod';

export interface FileDoc extends Doc {
  object_id: string;
  display_name: string;
  content_type: string;
  size: number;
  agent_name: string;
  session_id: string | null;
  upn: string;
  created_on: string;
  day: string;
  blob_name: string;
  /** The text extracted when the file was first attached (a blob beside the bytes), with its tokens. */
  extracted?: { blob: string; chars: number; tokens: number };
  /** Why the file's text cannot be extracted: attaching it again is refused without reading it again. */
  unreadable?: string;
}

declare module '../store/types.js' {
  interface StoredDocs {
    files: FileDoc;
  }
}

/** The text of a file as kept beside it: the characters, and the token marks a budget cuts them by. */
export const KeptText = z.object({
  text: z.string(),
  tokens: z.object({ count: z.number(), marks: z.array(z.number()) }),
});
export type KeptText = z.infer<typeof KeptText>;

/** A stored file's record to save: whose it is, its blob, its name and type, and the agent and session it is for. */
export interface NewFile {
  owner: string;
  stored: { blobName: string; size: number };
  fileName: string;
  contentType: string;
  agentName: string;
  sessionId: string | null;
}

export interface FileView {
  object_id: string;
  display_name: string;
  content_type: string;
  size_bytes: number;
  created_on: string;
  session_id: string | null;
}

const SNIFF_BYTES = 4100;
const TEXT_TYPES: Record<string, string> = {
  txt: 'text/plain',
  md: 'text/markdown',
  csv: 'text/csv',
  json: 'application/json',
  html: 'text/html',
  xml: 'application/xml',
  yaml: 'application/yaml',
  yml: 'application/yaml',
};
export const isTextType = (t: string) =>
  t.startsWith('text/') || ['application/json', 'application/xml', 'application/yaml'].includes(t);

/** Valid UTF-8 with no NUL bytes: treated as text. The prefix may end inside a character, so up to
 * three trailing bytes may be dropped. */
function looksLikeText(bytes: Buffer): boolean {
  if (bytes.includes(0)) return false;
  const strict = new TextDecoder('utf-8', { fatal: true });
  for (let cut = 0; cut <= Math.min(3, bytes.length); cut++) {
    try {
      strict.decode(bytes.subarray(0, bytes.length - cut));
      return true;
    } catch {
      if (bytes.length < SNIFF_BYTES) return false;
    }
  }
  return false;
}

/** The content type from the bytes; the client's only where the bytes cannot tell. */
export async function detectContentType(head: Buffer, fileName: string, declared: string | undefined): Promise<string> {
  const sniffed = await fileTypeFromBuffer(head);
  if (sniffed) return sniffed.mime;
  if (looksLikeText(head)) {
    if (declared && isTextType(declared)) return declared;
    return TEXT_TYPES[fileName.split('.').pop()?.toLowerCase() ?? ''] ?? 'text/plain';
  }
  return declared && !isTextType(declared) ? declared : 'application/octet-stream';
}

/** A file streamed to Blob storage and not yet recorded. */
export interface StoredBlob {
  blobName: string;
  size: number;
  head: Buffer;
}

/** Characters of kept attachment text held in memory, together: a file attached turn after turn is read once. */
const KEPT_CACHE_CHARS = 32 * 1024 * 1024;

export class Files {
  /** Kept texts by blob, least recently used first (a kept text never changes: its file's bytes never do). */
  private readonly kept = new Map<string, KeptText>();
  private keptChars = 0;

  private readonly records: Container<FileDoc>;
  private readonly blobs: BlobContainer;
  private readonly instanceId: string;
  /** The largest file. */
  readonly maxBytes: number;
  /** What one user's files may hold in all. */
  private readonly userMaxBytes: number;

  constructor(o: {
    records: Container<FileDoc>;
    blobs: BlobContainer;
    instanceId: string;
    maxBytes: number;
    userMaxBytes: number;
  }) {
    ({
      records: this.records,
      blobs: this.blobs,
      instanceId: this.instanceId,
      maxBytes: this.maxBytes,
      userMaxBytes: this.userMaxBytes,
    } = o);
  }

  /**
   * Streams one file to Blob storage, stopping at `maxBytes` (413), or where the user's files would hold more
   * than `userMaxBytes` in all (413 StorageQuotaExceeded: one user cannot take the storage others need).
   * Returns what it stored; the caller commits it with `save` once the rest of the request checks out, or
   * removes it with `discard`.
   */
  async store(stream: Readable, fileName: string, upn: string): Promise<StoredBlob> {
    if (!fileName) throw badRequest('file: a file name is required');
    const room = this.userMaxBytes - (await this.usedBy(upn));
    const quota = () =>
      new DomainError(
        'too-large',
        'StorageQuotaExceeded',
        `Your files would hold more than ${this.userMaxBytes} bytes: delete files to make room`,
      );
    if (room <= 0) throw quota();
    const container = await this.blobs.created();
    const owner = createHash('sha256').update(ownerKey(upn)).digest('hex').slice(0, 16);
    const blobName = `${owner}/${randomUUID()}`;
    let size = 0;
    let head = Buffer.alloc(0);
    const limit = this.maxBytes;
    const meter = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        size += chunk.length;
        if (head.length < SNIFF_BYTES) head = Buffer.concat([head, chunk.subarray(0, SNIFF_BYTES - head.length)]);
        if (size > limit) done(payloadTooLarge(`File exceeds the upload limit of ${limit} bytes`));
        else if (size > room) done(quota());
        else done(null, chunk);
      },
    });
    stream.on('error', (e) => meter.destroy(e));
    const blob = container.getBlockBlobClient(blobName);
    try {
      await blob.uploadStream(stream.pipe(meter), 4 * 1024 * 1024, 2, {
        metadata: { filename: encodeURIComponent(fileName).slice(0, 1024) },
      });
    } catch (e) {
      await blob.deleteIfExists();
      throw e;
    }
    return { blobName, size, head };
  }

  /** Bytes the user's files hold now. */
  private async usedBy(upn: string): Promise<number> {
    const [row] = await this.records.aggregate({
      partition: ownerKey(upn),
      aggregates: { bytes: { fn: 'sum', field: 'size' } },
    });
    return typeof row?.bytes === 'number' ? row.bytes : 0;
  }

  async discard(blobName: string): Promise<unknown> {
    return (await this.blobs.blob(blobName)).deleteIfExists();
  }

  async save({ owner, stored, fileName, contentType, agentName, sessionId }: NewFile): Promise<FileDoc> {
    await (await this.blobs.blob(stored.blobName)).setHTTPHeaders({ blobContentType: contentType });
    const id = stored.blobName.split('/')[1] ?? randomUUID();
    const upn = ownerKey(owner);
    const now = new Date().toISOString();
    return this.records.create({
      id,
      pk: upn,
      object_id: this.objectIdOf(id),
      display_name: fileName,
      content_type: contentType,
      size: stored.size,
      agent_name: agentName,
      session_id: sessionId,
      upn,
      created_on: now,
      day: dayOf(now),
      blob_name: stored.blobName,
    });
  }

  /** A file as the API shows it. */
  present(doc: FileDoc): FileView {
    return {
      object_id: this.objectIdOf(doc.id),
      display_name: doc.display_name,
      content_type: doc.content_type,
      size_bytes: doc.size,
      created_on: doc.created_on,
      session_id: doc.session_id,
    };
  }

  /** A file's object id. */
  objectIdOf(fileId: string): string {
    return `/instances/${this.instanceId}/providers/Svc.Attachment/attachments/${fileId}`;
  }

  /** The file id an object id names, in the current form or the first release's (`/instances/{id}/files/{fileId}`). */
  fileIdOf(objectId: string): string | undefined {
    const m = /^\/instances\/([^/]+)\/(?:providers\/Svc\.Attachment\/attachments|files)\/([0-9a-f-]{36})$/i.exec(
      objectId,
    );
    return m && m[1] === this.instanceId ? m[2]?.toLowerCase() : undefined;
  }

  /** The caller's own file by object id; anyone else's, or an unknown one, is undefined. */
  async find(upn: string, objectId: string): Promise<FileDoc | undefined> {
    const id = this.fileIdOf(objectId);
    return id ? this.records.read(ownerKey(upn), id) : undefined;
  }

  /** The caller's own file by object id; anyone else's is not found. */
  async get(upn: string, objectId: string): Promise<FileDoc> {
    const doc = await this.find(upn, objectId);
    if (!doc) throw notFound(`Attachment ${objectId} not found`);
    return doc;
  }

  /** The caller's own file by id; anyone else's is 404. */
  async byId(upn: string, fileId: string): Promise<FileDoc> {
    const doc = await this.records.read(ownerKey(upn), fileId.toLowerCase());
    if (!doc) throw notFound(`File ${fileId} not found`);
    return doc;
  }

  /** A page of the owner's files, newest first. */
  list(upn: string, continuation: string | undefined, limit: number): Promise<Page<FileDoc>> {
    return this.records.query({
      partition: ownerKey(upn),
      orderBy: [{ field: 'created_on', direction: 'desc' }],
      limit,
      ...(continuation !== undefined ? { continuation } : {}),
    });
  }

  /** The bytes of the caller's own file, as they stream from Blob storage. */
  async content(upn: string, fileId: string): Promise<{ file: FileDoc; bytes: AsyncIterable<string | Uint8Array> }> {
    const file = await this.byId(upn, fileId);
    try {
      const download = await (await this.blobs.blob(file.blob_name)).download();
      if (!download.readableStreamBody) throw notFound(`File ${fileId} not found`);
      return { file, bytes: download.readableStreamBody };
    } catch (e) {
      if (statusCodeOf(e) === 404) throw notFound(`File ${fileId} not found`);
      throw e;
    }
  }

  /** Deletes the caller's own file: its blob, then its record (so a retry after a failure finishes the job). */
  async delete(upn: string, fileId: string): Promise<void> {
    const file = await this.byId(upn, fileId);
    await (await this.blobs.blob(file.blob_name)).deleteIfExists({ deleteSnapshots: 'include' });
    if (file.extracted) {
      const kept = this.kept.get(file.extracted.blob);
      if (kept && this.kept.delete(file.extracted.blob)) this.keptChars -= kept.text.length;
      await (await this.blobs.blob(file.extracted.blob)).deleteIfExists();
    }
    await this.records.delete(file.pk, file.id);
  }

  /** The file's bytes (the first `maxBytes` when given); an attachment whose blob is gone is a 400 naming it. */
  async bytesOf(file: FileDoc, maxBytes?: number): Promise<Buffer> {
    try {
      return await (
        await this.blobs.blob(file.blob_name)
      ).downloadToBuffer(0, maxBytes !== undefined && maxBytes < file.size ? maxBytes : undefined);
    } catch (e) {
      // The record outlived its blob (deleted out of band): refused like an unknown attachment.
      if (statusCodeOf(e) === 404)
        throw validationError([{ field: 'attachments', message: `Attachment ${file.display_name} not found` }]);
      throw e;
    }
  }

  /** The text kept for the file, if it has been extracted. */
  async keptText(file: FileDoc): Promise<KeptText | undefined> {
    if (!file.extracted) return undefined;
    const blob = file.extracted.blob;
    const cached = this.kept.get(blob);
    if (cached) {
      this.kept.delete(blob);
      this.kept.set(blob, cached);
      return cached;
    }
    try {
      const bytes = await (await this.blobs.blob(blob)).downloadToBuffer();
      const kept = KeptText.parse(JSON.parse(bytes.toString('utf8')));
      this.remember(blob, kept);
      return kept;
    } catch (e) {
      if (statusCodeOf(e) === 404) return undefined;
      throw e;
    }
  }

  private remember(blob: string, kept: KeptText): void {
    this.kept.set(blob, kept);
    this.keptChars += kept.text.length;
    for (const [oldest, text] of this.kept) {
      if (this.keptChars <= KEPT_CACHE_CHARS) break;
      this.kept.delete(oldest);
      this.keptChars -= text.text.length;
    }
  }

  /** Keeps a file's extracted text beside its bytes, and notes it on the record. */
  async keepText(file: FileDoc, kept: KeptText): Promise<void> {
    const blob = `${file.blob_name}.text.json`;
    const body = JSON.stringify(kept);
    await (
      await this.blobs.blob(blob)
    ).upload(body, Buffer.byteLength(body), { blobHTTPHeaders: { blobContentType: 'application/json' } });
    await this.records.patch(file.pk, file.id, [
      { op: 'set', path: 'extracted', value: { blob, chars: kept.text.length, tokens: kept.tokens.count } },
    ]);
    this.remember(blob, kept);
  }

  /** Notes that the file's text cannot be extracted, and why. */
  async markUnreadable(file: FileDoc, reason: string): Promise<void> {
    await this.records.patch(file.pk, file.id, [{ op: 'set', path: 'unreadable', value: reason }]);
  }
}
