// Text from the document formats a pipeline indexes: plain text and Markdown as UTF-8 here; HTML, PDF, Word, PowerPoint
// and Excel in the extraction pool's worker threads (extract-formats.ts), bounded in time, memory and input size. An
// unreadable document is an ExtractionError naming the reason, which the run reports for that document alone.
import path from 'node:path';
import type { ExtractionPool } from './extract-pool.js';

export class ExtractionError extends Error {}

/** An extraction worker's first message: its slow readers are loaded, and its documents' deadlines may start. */
export const EXTRACTOR_READY = 'extract-worker-ready';

export interface Extracted {
  title: string;
  text: string;
}

/** The formats by file extension. */
export const EXTRACTABLE = ['.txt', '.md', '.html', '.htm', '.pdf', '.docx', '.pptx', '.xlsx'] as const;

/** The format each document content type is read as (by the pipelines and for attachments). */
export const FORMAT_BY_TYPE: Readonly<Record<string, string>> = {
  'text/html': '.html',
  'text/plain': '.txt',
  'text/markdown': '.md',
  'application/pdf': '.pdf',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': '.docx',
  'application/vnd.openxmlformats-officedocument.presentationml.presentation': '.pptx',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': '.xlsx',
};

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The extension a document is read as: its name's, or for a web page its content type's. */
export function formatOf(name: string, contentType?: string): string | undefined {
  const type = contentType?.split(';')[0]?.trim().toLowerCase();
  const ext = path.extname(new URL(name, 'file:///').pathname).toLowerCase();
  if (EXTRACTABLE.some((e) => e === ext)) return ext;
  return type ? FORMAT_BY_TYPE[type] : undefined;
}

/** How a document is read: its format (extension), the title when it has none, what stops the reading. */
export interface ExtractRequest {
  format: string;
  fallbackTitle: string;
  signal?: AbortSignal | undefined;
}

export async function extractText(
  pool: ExtractionPool,
  bytes: Uint8Array,
  { format, fallbackTitle, signal }: ExtractRequest,
): Promise<Extracted> {
  try {
    switch (format) {
      case '.txt':
        return { title: fallbackTitle, text: utf8.decode(bytes) };
      case '.md':
        return markdown(utf8.decode(bytes), fallbackTitle);
      case '.html':
      case '.htm':
      case '.pdf':
      case '.docx':
      case '.pptx':
      case '.xlsx':
        return await pool.extract(bytes, { format, fallbackTitle, signal });
      default:
        throw new ExtractionError(`${format || 'this'} documents are not indexed (${EXTRACTABLE.join(', ')} are)`);
    }
  } catch (e) {
    if (e instanceof ExtractionError || signal?.aborted) throw e;
    if (e instanceof TypeError && /encoded data was not valid/.test(e.message))
      throw new ExtractionError('the text is not UTF-8');
    throw new ExtractionError(`the ${format.slice(1).toUpperCase()} document cannot be read`);
  }
}

/** The first level-1 heading is the title. */
function markdown(text: string, fallbackTitle: string): Extracted {
  const heading = /^#\s+(.+)$/m.exec(text)?.[1]?.trim();
  return { title: heading || fallbackTitle, text };
}
