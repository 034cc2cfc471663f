// Files. Upload: multipart `file` (required), `agent_name` (required),
// `session_id` (optional), streamed to Blob storage with a size limit; nothing is kept when the request
// fails. Then the caller's own files: list (newest first, paged), metadata, content, delete.
import { z } from 'zod';
import { detectContentType, type StoredBlob } from '../shared/files/files.js';
import { payloadTooLarge, validationError } from '../shared/errors.js';
import { readMultipart, type FileHandler } from '../shared/http/multipart.js';
import { defineRoute } from '../shared/http/route.js';
import { pagedJson, pagedResponse, PageQuery } from '../shared/http/paging.js';
import { GUID, Guid, InstanceParams } from '../shared/schemas.js';
import { json } from '../shared/http/types.js';
import { agentForUse } from '../shared/providers/agent-access.js';
import type { Conversations } from '../shared/conversations/conversations.js';
import type { Files } from '../shared/files/files.js';
import type { Pager } from '../shared/http/paging.js';

/** What this module uses of the service (the hosts pass the whole of it). */
export interface FilesRoutesDeps {
  readonly conversations: Conversations;
  readonly files: Files;
  readonly pager: Pager;
}

const UploadResult = z
  .object({ object_id: z.string(), display_name: z.string(), content_type: z.string() })
  .meta({ id: 'UploadResult' });
const FileMetadata = z
  .object({
    object_id: z.string().describe('/instances/{instanceId}/providers/Svc.Attachment/attachments/{fileId}'),
    display_name: z.string(),
    content_type: z.string(),
    size_bytes: z.number().int(),
    created_on: z.string(),
    session_id: z.string().nullable(),
  })
  .meta({ id: 'FileMetadata' });
const FileParams = InstanceParams.extend({ fileId: Guid });
const common = { api: 'core', tag: 'Files', auth: 'any', errors: 'core' } as const;

/** Downloads are attachments: a stored HTML or SVG file is never rendered in the service's origin. */
const contentDisposition = (name: string) =>
  `attachment; filename="${name.replace(/[^\x20-\x7e]|["\\]/g, '_')}"; filename*=UTF-8''${encodeURIComponent(name)}`;

/** The one `file` part streams straight into Blob storage while it arrives. */
const storeFile = (
  services: FilesRoutesDeps,
  upn: string,
): FileHandler<{ name: string; declaredType: string | undefined; stored: StoredBlob }> => ({
  accept: (part) =>
    part.field === 'file'
      ? services.files
          .store(part.stream, part.fileName, upn)
          .then((stored) => ({ name: part.fileName, declaredType: part.declaredType, stored }))
      : undefined,
  discard: (kept) => services.files.discard(kept.stored.blobName),
});

export const routes = [
  defineRoute({
    ...common,
    name: 'files-upload',
    method: 'POST',
    path: '/instances/{instanceId}/files/upload',
    summary: 'Upload a file for an agent to analyse (multipart: file, agent_name, session_id)',
    params: InstanceParams,
    bodyKind: 'stream',
    bodyDoc: {
      contentType: 'multipart/form-data',
      schema: z.object({
        file: z.string().meta({ format: 'binary' }).describe('The file'),
        agent_name: z.string(),
        session_id: z.string().optional(),
      }),
    },
    responses: {
      200: { description: 'Uploaded', schema: UploadResult },
      413: { description: 'Larger than MAX_UPLOAD_BYTES' },
    },
    handler: async ({ services, principal, request }) => {
      const declaredLength = Number(request.header('content-length'));
      if (declaredLength > services.files.maxBytes + 64 * 1024)
        throw payloadTooLarge(`File exceeds the upload limit of ${services.files.maxBytes} bytes`);
      const { fields, files } = await readMultipart(
        request,
        { fileSize: services.files.maxBytes + 1, fieldSize: 4096 },
        storeFile(services, principal.upn),
      );
      const file = files.get('file');
      const stored = file?.stored;
      try {
        if (!file || !stored) throw validationError([{ field: 'file', message: 'file is required' }]);
        const agentName = fields.agent_name?.trim();
        if (!agentName) throw validationError([{ field: 'agent_name', message: 'agent_name is required' }]);
        const sessionId = fields.session_id?.trim() || undefined;
        if (sessionId !== undefined && !GUID.test(sessionId))
          throw validationError([{ field: 'session_id', message: 'Invalid session_id format' }]);
        await agentForUse(services, principal, agentName);
        if (sessionId) await services.conversations.get(principal.upn, sessionId);
        const contentType = await detectContentType(stored.head, file.name, file.declaredType);
        const doc = await services.files.save({
          owner: principal.upn,
          stored,
          fileName: file.name,
          contentType,
          agentName,
          sessionId: sessionId?.toLowerCase() ?? null,
        });
        return json(200, { object_id: doc.object_id, display_name: doc.display_name, content_type: doc.content_type });
      } catch (e) {
        if (stored) await services.files.discard(stored.blobName);
        throw e;
      }
    },
  }),
  defineRoute({
    ...common,
    name: 'files-list',
    method: 'GET',
    path: '/instances/{instanceId}/files',
    summary: "The caller's files, newest first",
    params: InstanceParams,
    query: PageQuery,
    responses: { 200: pagedResponse('Files', FileMetadata) },
    handler: async ({ services, principal, query }) =>
      pagedJson(
        await services.pager.page(principal, {
          list: 'files',
          query,
          fetch: (c, n) => services.files.list(principal.upn, c, n),
        }),
        (f) => services.files.present(f),
      ),
  }),
  defineRoute({
    ...common,
    name: 'files-get',
    method: 'GET',
    path: '/instances/{instanceId}/files/{fileId}',
    summary: "One of the caller's files (metadata)",
    params: FileParams,
    responses: { 200: { description: 'The file', schema: FileMetadata } },
    handler: async ({ services, principal, params }) =>
      json(200, services.files.present(await services.files.byId(principal.upn, params.fileId))),
  }),
  defineRoute({
    ...common,
    name: 'files-content',
    method: 'GET',
    path: '/instances/{instanceId}/files/{fileId}/content',
    summary: "The bytes of one of the caller's files, with their content type",
    params: FileParams,
    responses: {
      200: {
        description: 'The bytes (Content-Disposition: attachment)',
        contentType: 'application/octet-stream',
        schema: z.string().meta({ format: 'binary' }),
      },
    },
    handler: async ({ services, principal, params }) => {
      const { file, bytes } = await services.files.content(principal.upn, params.fileId);
      return {
        status: 200,
        headers: {
          'content-type': file.content_type,
          'content-length': String(file.size),
          'content-disposition': contentDisposition(file.display_name),
        },
        stream: bytes,
      };
    },
  }),
  defineRoute({
    ...common,
    name: 'files-delete',
    method: 'DELETE',
    path: '/instances/{instanceId}/files/{fileId}',
    summary: "Delete one of the caller's files (its bytes too)",
    params: FileParams,
    responses: { 204: { description: 'Deleted' } },
    handler: async ({ services, principal, params }) => {
      await services.files.delete(principal.upn, params.fileId);
      return { status: 204 };
    },
  }),
];
