// File upload (spec 4.1, 2.7): multipart `file` (required), `agent_name` (required), `session_id`
// (optional); streamed to Blob storage with a size limit; nothing is kept when the request fails.
import { z } from 'zod';
import { detectContentType, type StoredBlob } from '../shared/files/files.js';
import { payloadTooLarge, validationError } from '../shared/http/errors.js';
import { readMultipart, type FileHandler } from '../shared/http/multipart.js';
import { defineRoute } from '../shared/http/route.js';
import { GUID, InstanceParams } from '../shared/http/schemas.js';
import { json } from '../shared/http/types.js';
import { agentForUse } from '../shared/providers/agent-access.js';
import type { Services } from '../shared/services.js';

const UploadResult = z.object({ object_id: z.string(), display_name: z.string(), content_type: z.string() }).meta({ id: 'UploadResult' });

/** The one `file` part streams straight into Blob storage while it arrives. */
const storeFile = (services: Services, upn: string): FileHandler<{ name: string; declaredType: string | undefined; stored: StoredBlob }> => ({
  accept: (part) => (part.field === 'file' ? services.files.store(part.stream, part.fileName, upn).then((stored) => ({ name: part.fileName, declaredType: part.declaredType, stored })) : undefined),
  discard: (kept) => services.files.discard(kept.stored.blobName),
});

export const routes = [
  defineRoute({
    name: 'files-upload',
    api: 'core',
    method: 'POST',
    path: '/instances/{instanceId}/files/upload',
    summary: 'Upload a file for an agent to analyse (multipart: file, agent_name, session_id)',
    tag: 'Files',
    auth: 'any',
    errors: 'core',
    params: InstanceParams,
    bodyKind: 'stream',
    bodyDoc: {
      contentType: 'multipart/form-data',
      schema: z.object({ file: z.string().describe('The file (binary)'), agent_name: z.string(), session_id: z.string().optional() }),
    },
    responses: { 200: { description: 'Uploaded', schema: UploadResult }, 413: { description: 'Larger than MAX_UPLOAD_BYTES' } },
    handler: async ({ services, principal, request }) => {
      const declaredLength = Number(request.header('content-length'));
      if (declaredLength > services.files.maxBytes + 64 * 1024) throw payloadTooLarge(`File exceeds the upload limit of ${services.files.maxBytes} bytes`);
      const { fields, files } = await readMultipart(request, { fileSize: services.files.maxBytes + 1, fieldSize: 4096 }, storeFile(services, principal.upn));
      const file = files.get('file');
      const stored = file?.stored;
      try {
        if (!file || !stored) throw validationError([{ field: 'file', message: 'file is required' }]);
        const agentName = fields.agent_name?.trim();
        if (!agentName) throw validationError([{ field: 'agent_name', message: 'agent_name is required' }]);
        const sessionId = fields.session_id?.trim() || undefined;
        if (sessionId !== undefined && !GUID.test(sessionId)) throw validationError([{ field: 'session_id', message: 'Invalid session_id format' }]);
        await agentForUse(services, principal, agentName);
        if (sessionId) await services.conversations.get(principal.upn, sessionId);
        const contentType = await detectContentType(stored.head, file.name, file.declaredType);
        const doc = await services.files.save(principal.upn, stored, file.name, contentType, agentName, sessionId?.toLowerCase() ?? null);
        return json(200, { object_id: doc.object_id, display_name: doc.display_name, content_type: doc.content_type });
      } catch (e) {
        if (stored) await services.files.discard(stored.blobName);
        throw e;
      }
    },
  }),
];
