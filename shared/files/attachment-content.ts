// What a completion's attachments give the model: the text of each document (extracted the first time the
// file is attached, in the extraction workers, and kept beside the file), cut to ATTACHMENT_MAX_TOKENS over
// all attachments with a marker where it cuts; and images as image content parts, for models that read them.
import { validationError } from '../errors.js';
import { ExtractionError, FORMAT_BY_TYPE } from '../knowledge/extract.js';
import { charsWithin } from '../knowledge/token-marks.js';
import { isTextType, type FileDoc, type KeptText } from './files.js';
import type { Config } from '../config.js';
import type { Files } from './files.js';
import type { ExtractionPool } from '../knowledge/extract-pool.js';
import type { Log } from '../log.js';

/** What this module uses of the service (the hosts pass the whole of it). */
export interface AttachmentContentDeps {
  readonly config: Config;
  readonly extraction: ExtractionPool;
  readonly files: Files;
  readonly log: Log;
}

/** Image types sent to models whose capabilities include `vision`. */
export const IMAGE_TYPES: readonly string[] = ['image/png', 'image/jpeg', 'image/webp', 'image/gif'];
/** Characters of a file's text kept (about 250,000 tokens: past any budget). */
export const KEPT_CHARS = 1_000_000;
/** Bytes of images one completion sends, together. */
export const MAX_IMAGE_BYTES = 20 * 1024 * 1024;

export interface AttachedImage {
  /** The attachment's object id (what the stored completion prompt shows instead of the bytes). */
  objectId: string;
  /** The image as a data URL (what the model is sent). */
  dataUrl: string;
}

export interface AttachmentContent {
  /** The attachments' text, a section per file, for the user message before the prompt ('' when none). */
  context: string;
  images: AttachedImage[];
}

const unreadable = (file: FileDoc, reason: string) =>
  validationError([{ field: 'attachments', message: `Attachment ${file.display_name} cannot be read: ${reason}` }]);

/** The format a file's text is read as, by its content type; undefined for types that hold no text. */
function formatOf(contentType: string): string | undefined {
  const type = contentType.split(';')[0]?.trim().toLowerCase() ?? '';
  return FORMAT_BY_TYPE[type] ?? (isTextType(type) ? '.txt' : undefined);
}

/** The longest prefix of `bytes` that does not end inside a UTF-8 character. */
function utf8Prefix(bytes: Buffer): Buffer {
  const end = bytes.length;
  let back = 0;
  while (end - back - 1 >= 0 && back < 4 && ((bytes[end - back - 1] ?? 0) & 0xc0) === 0x80) back++;
  const lead = bytes[end - back - 1];
  if (lead === undefined || lead < 0xc0) return bytes;
  const width = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;
  return back + 1 < width ? bytes.subarray(0, end - back - 1) : bytes;
}

/** Cuts texts in turn to one token budget over all of them: each call answers how many characters of its text fit. */
function budgetCut(tokens: number): (kept: KeptText) => number {
  let budget = tokens;
  return (kept) => {
    const chars = charsWithin(kept.tokens, kept.text.length, budget);
    budget -= chars === kept.text.length ? kept.tokens.count : budget;
    return chars;
  };
}

/** The file's text: kept from an earlier completion, else extracted now (once) and kept. */
async function textOf(s: AttachmentContentDeps, file: FileDoc, signal: AbortSignal | undefined): Promise<KeptText> {
  if (file.unreadable !== undefined) throw unreadable(file, file.unreadable);
  const kept = await s.files.keptText(file);
  if (kept) return kept;
  const format = formatOf(file.content_type);
  if (!format) throw unreadable(file, `${file.content_type} files hold no text the service reads`);
  // A text file is read from its start only: its first KEPT_CHARS characters are at most four bytes each.
  const text = format === '.txt' || format === '.md';
  const bytes = await s.files.bytesOf(file, text ? KEPT_CHARS * 4 : undefined);
  let extracted: KeptText;
  try {
    extracted = await s.extraction.extractCounted(text && bytes.length < file.size ? utf8Prefix(bytes) : bytes, {
      format,
      maxChars: KEPT_CHARS,
      signal,
    });
  } catch (e) {
    if (!(e instanceof ExtractionError)) throw e;
    await s.files.markUnreadable(file, e.message).catch(() => undefined);
    throw unreadable(file, e.message);
  }
  // Kept for the next completion; a failure to keep it only costs that one the extraction again.
  await s.files
    .keepText(file, extracted)
    .catch((e: unknown) =>
      s.log.warn('An attachment text was not kept', { error: e instanceof Error ? e.message : String(e) }),
    );
  return extracted;
}

/**
 * The attachments' content for one completion, in the order attached. An image for a model without
 * `vision`, or a file whose text cannot be extracted, is a 400 ValidationError naming the file.
 */
export async function attachmentContent(
  s: AttachmentContentDeps,
  files: readonly FileDoc[],
  { vision, signal }: { vision: boolean; signal?: AbortSignal | undefined },
): Promise<AttachmentContent> {
  for (const file of files) {
    if (IMAGE_TYPES.includes(file.content_type) && !vision) {
      throw validationError([
        {
          field: 'attachments',
          message:
            `Attachment ${file.display_name} is an image, and the agent's AI model does not read images (its ` +
            `capabilities do not include vision)`,
        },
      ]);
    }
  }
  const images: AttachedImage[] = [];
  let imageBytes = 0;
  const sections: string[] = [];
  const cut = budgetCut(s.config.attachmentMaxTokens);
  const marker = `[... truncated: the attachments' text is cut at ${s.config.attachmentMaxTokens} tokens ...]`;
  // Read side by side (each file's first extraction runs in a worker); cut in the order attached.
  const texts = await Promise.all(
    files.map(async (f) => (IMAGE_TYPES.includes(f.content_type) ? undefined : textOf(s, f, signal))),
  );
  for (const [i, file] of files.entries()) {
    const kept = texts[i];
    if (!kept) {
      imageBytes += file.size;
      if (imageBytes > MAX_IMAGE_BYTES)
        throw validationError([
          {
            field: 'attachments',
            message:
              `Attachment ${file.display_name}: the images of one completion may hold ` +
              `${MAX_IMAGE_BYTES / 1024 / 1024} MiB together`,
          },
        ]);
      const bytes = await s.files.bytesOf(file);
      images.push({
        objectId: s.files.objectIdOf(file.id),
        dataUrl: `data:${file.content_type};base64,${bytes.toString('base64')}`,
      });
      continue;
    }
    const chars = cut(kept);
    const lines = [kept.text.slice(0, chars), chars < kept.text.length ? marker : ''].filter((l) => l.length > 0);
    sections.push(`Attached file "${file.display_name}":\n${lines.join('\n')}`);
  }
  return { context: sections.join('\n\n'), images };
}

/** Each attachment's text, cut to the same token budget over all of them (workflow plugins); an image has none. */
export async function attachmentTexts(
  s: AttachmentContentDeps,
  files: readonly FileDoc[],
  signal?: AbortSignal,
): Promise<{ file_name: string; content_type: string; text: string }[]> {
  const texts = await Promise.all(
    files.map(async (f) => (IMAGE_TYPES.includes(f.content_type) ? undefined : textOf(s, f, signal))),
  );
  const cut = budgetCut(s.config.attachmentMaxTokens);
  return files.map((file, i) => {
    const kept = texts[i];
    const chars = kept ? cut(kept) : 0;
    return {
      file_name: file.display_name,
      content_type: file.content_type,
      text: kept ? kept.text.slice(0, chars) : '',
    };
  });
}
