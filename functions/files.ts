// File upload (spec 4.1, 2.7): multipart `file` (required), `agent_name` (required), `session_id`
// (optional); streamed to Blob storage with a size limit; nothing is kept when the request fails.
import busboy from 'busboy';
import { z } from 'zod';
import { detectContentType } from '../shared/files/files.js';
import { badRequest, payloadTooLarge, toError, validationError } from '../shared/http/errors.js';
import { defineRoute } from '../shared/http/route.js';
import { GUID, InstanceParams } from '../shared/http/schemas.js';
import { json, type PlatformRequest } from '../shared/http/types.js';
import { agentForUse } from '../shared/providers/agent-access.js';
import type { Services } from '../shared/services.js';

const UploadResult = z.object({ object_id: z.string(), display_name: z.string(), content_type: z.string() }).meta({ id: 'UploadResult' });

interface Parsed {
  fields: Record<string, string>;
  file?: { name: string; declaredType: string | undefined; stored: Promise<{ blobName: string; size: number; head: Buffer }> };
}

/** Reads the multipart body; the one file streams straight into Blob storage while it arrives. */
function readMultipart(request: PlatformRequest, services: Services, upn: string): Promise<Parsed> {
  return new Promise((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({
        headers: { 'content-type': request.header('content-type') ?? '' },
        limits: { files: 1, fields: 10, fieldSize: 4096, fileSize: services.files.maxBytes + 1 },
      });
    } catch {
      reject(badRequest('The body must be multipart/form-data', [{ field: 'body', message: 'The body must be multipart/form-data' }]));
      return;
    }
    const parsed: Parsed = { fields: {} };
    parser.on('field', (name, value) => (parsed.fields[name] = value));
    parser.on('file', (field, stream, info) => {
      if (field !== 'file' || parsed.file) {
        stream.resume();
        return;
      }
      const declared = info.mimeType && info.mimeType !== 'application/octet-stream' ? info.mimeType : undefined;
      const name = info.filename ?? '';
      const stored = services.files.store(stream, name, upn);
      // Keep draining after a failure so the parser can finish; the failure is reported once it has.
      stored.catch(() => stream.resume());
      parsed.file = { name, declaredType: declared, stored };
    });
    parser.on('error', (e) => reject(badRequest(`Malformed multipart body: ${toError(e).message}`)));
    parser.on('close', () => resolve(parsed));
    request.stream().pipe(parser);
  });
}

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
      const { fields, file } = await readMultipart(request, services, principal.upn);
      const stored = await file?.stored;
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
