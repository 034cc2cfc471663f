// The one multipart/form-data reader (busboy). Every stream involved (the request, the parser, each file
// part) has its errors handled: a malformed, truncated or aborted body is a 400 (a file over its limit a
// 413), never an unhandled 'error' event, and whatever a failed request already stored is discarded.
import type { Readable } from 'node:stream';
import busboy from 'busboy';
import { DomainError, badRequest, payloadTooLarge } from '../errors.js';
import type { PlatformRequest } from './types.js';

export interface MultipartLimits {
  /** Largest file part, bytes. */
  fileSize: number;
  files?: number;
  fields?: number;
  fieldSize?: number;
}

export interface FilePart {
  field: string;
  fileName: string;
  /** The client's content type, when it sent a specific one. */
  declaredType: string | undefined;
  stream: Readable;
}

/**
 * What a caller does with a file part: consume `part.stream` to the end and resolve with what it kept
 * (or reject); undefined skips the part. `discard` undoes a kept part when the request fails later.
 */
export interface FileHandler<F> {
  accept(part: FilePart): Promise<F> | undefined;
  discard?(kept: F): Promise<unknown>;
}

export interface Multipart<F> {
  fields: Record<string, string>;
  files: Map<string, F>;
}

const malformed = (why: string) =>
  badRequest(`Malformed multipart body: ${why}`, [{ field: 'body', message: `Malformed multipart body: ${why}` }]);

/** Parses a multipart/form-data request body; rejects with a 4xx DomainError. */
export function readMultipart<F>(
  request: PlatformRequest,
  limits: MultipartLimits,
  handler: FileHandler<F>,
): Promise<Multipart<F>> {
  const source = request.stream();
  let parser: busboy.Busboy;
  try {
    parser = busboy({
      headers: { 'content-type': request.header('content-type') ?? '' },
      // Browsers and fetch send file names as raw UTF-8 (busboy's default reads them as Latin-1).
      defParamCharset: 'utf8',
      limits: {
        files: limits.files ?? 1,
        fields: limits.fields ?? 10,
        fieldSize: limits.fieldSize ?? 64 * 1024,
        fileSize: limits.fileSize,
        parts: 32,
      },
    });
  } catch {
    return Promise.reject(malformed('the body must be multipart/form-data with a boundary'));
  }
  return new Promise((resolve, reject) => {
    const fields: Record<string, string> = {};
    const kept: Promise<[string, F]>[] = [];
    let settled = false;

    const fail = (error: DomainError) => {
      if (settled) return;
      settled = true;
      source.unpipe(parser);
      parser.removeAllListeners('close');
      // Undo what was stored before the failure; the rejection is the request's answer.
      void Promise.allSettled(kept).then((results) => {
        for (const r of results)
          if (r.status === 'fulfilled') void handler.discard?.(r.value[1]).catch(() => undefined);
      });
      reject(error);
    };

    parser.on('field', (name, value, info) => {
      if (info.valueTruncated) fail(malformed(`field ${name} is too long`));
      else fields[name] = value;
    });
    parser.on('file', (field, stream, info) => {
      // busboy also reports a broken part on the parser; this listener keeps the part's own error handled.
      stream.on('error', () => undefined);
      stream.on('limit', () => fail(payloadTooLarge(`The file is larger than ${limits.fileSize} bytes`)));
      const accepted = settled
        ? undefined
        : handler.accept({
            field,
            fileName: info.filename ?? '',
            declaredType: info.mimeType && info.mimeType !== 'application/octet-stream' ? info.mimeType : undefined,
            stream,
          });
      if (!accepted) {
        stream.resume();
        return;
      }
      const entry = accepted.then((value): [string, F] => [field, value]);
      kept.push(entry);
      // A part whose consumer failed is drained so the parser can go on; the failure fails the request.
      entry.catch((e: unknown) => {
        stream.resume();
        fail(e instanceof DomainError ? e : malformed('a file part could not be read'));
      });
    });
    for (const event of ['filesLimit', 'fieldsLimit', 'partsLimit'] as const)
      parser.on(event, () => fail(malformed('too many parts')));
    parser.on('error', (e: Error) => fail(malformed(e.message)));
    parser.on('close', () => {
      Promise.all(kept).then(
        (files) => {
          if (settled) return;
          settled = true;
          resolve({ fields, files: new Map(files) });
        },
        () => undefined, // reported by the part's own handler above
      );
    });
    source.on('error', () => fail(malformed('the body was cut off')));
    source.on('close', () => {
      if (!source.readableEnded) fail(malformed('the body was cut off'));
    });
    source.pipe(parser);
  });
}

/** A handler that reads the one file field into memory (a package, checked whole before anything is stored). */
export function bufferedFile(field: string): FileHandler<Buffer> {
  const collect = (stream: Readable) =>
    new Promise<Buffer>((resolve, reject) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => resolve(Buffer.concat(chunks)));
      stream.on('error', reject);
    });
  return { accept: (part) => (part.field === field ? collect(part.stream) : undefined) };
}
