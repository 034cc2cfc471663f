// Text from the document formats a pipeline indexes, each read by a well-kept library: PDF with pdf.js,
// Word with mammoth, HTML with html-to-text; plain text and Markdown as UTF-8. An unreadable document is an
// ExtractionError naming the reason, which the run reports for that document alone.
import path from 'node:path';

export class ExtractionError extends Error {}

export interface Extracted {
  title: string;
  text: string;
}

/** The formats by file extension. */
export const EXTRACTABLE = ['.txt', '.md', '.html', '.htm', '.pdf', '.docx'] as const;

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The extension a document is read as: its name's, or for a web page its content type's. */
export function formatOf(name: string, contentType?: string): string | undefined {
  const type = contentType?.split(';')[0]?.trim().toLowerCase();
  const byType: Record<string, string> = {
    'text/html': '.html',
    'text/plain': '.txt',
    'text/markdown': '.md',
    'application/pdf': '.pdf',
    'application/vnd.openxmlformats-officedocument.wordprocessingml.document': '.docx',
  };
  const ext = path.extname(new URL(name, 'file:///').pathname).toLowerCase();
  if ((EXTRACTABLE as readonly string[]).includes(ext)) return ext;
  return type ? byType[type] : undefined;
}

export async function extractText(bytes: Uint8Array, format: string, fallbackTitle: string): Promise<Extracted> {
  try {
    switch (format) {
      case '.txt':
        return { title: fallbackTitle, text: utf8.decode(bytes) };
      case '.md':
        return markdown(utf8.decode(bytes), fallbackTitle);
      case '.html':
      case '.htm':
        return await html(utf8.decode(bytes), fallbackTitle);
      case '.pdf':
        return await pdf(bytes, fallbackTitle);
      case '.docx':
        return await docx(bytes, fallbackTitle);
      default:
        throw new ExtractionError(`${format || 'this'} documents are not indexed (${EXTRACTABLE.join(', ')} are)`);
    }
  } catch (e) {
    if (e instanceof ExtractionError) throw e;
    if (e instanceof TypeError && /encoded data was not valid/.test(e.message)) throw new ExtractionError('the text is not UTF-8');
    throw new ExtractionError(`the ${format.slice(1).toUpperCase()} document cannot be read: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`);
  }
}

/** The first level-1 heading is the title. */
function markdown(text: string, fallbackTitle: string): Extracted {
  const heading = /^#\s+(.+)$/m.exec(text)?.[1]?.trim();
  return { title: heading || fallbackTitle, text };
}

async function html(source: string, fallbackTitle: string): Promise<Extracted> {
  // Each reader is loaded on first use: a service that indexes nothing never loads them.
  const { htmlToText } = await import('html-to-text');
  const title = htmlToText(source, { baseElements: { selectors: ['title'] }, wordwrap: false }).trim();
  const text = htmlToText(source, {
    wordwrap: false,
    selectors: [
      { selector: 'a', options: { ignoreHref: true } },
      { selector: 'img', format: 'skip' },
      { selector: 'title', format: 'skip' },
    ],
  });
  return { title: title || fallbackTitle, text };
}

async function pdf(bytes: Uint8Array, fallbackTitle: string): Promise<Extracted> {
  const { getDocument, VerbosityLevel } = await import('pdfjs-dist/legacy/build/pdf.mjs');
  // A copy: pdf.js transfers (detaches) the buffer it is given.
  const task = getDocument({ data: new Uint8Array(bytes), isEvalSupported: false, disableFontFace: true, useSystemFonts: false, verbosity: VerbosityLevel.ERRORS });
  try {
    const doc = await task.promise;
    const info: { Title?: unknown } | undefined = (await doc.getMetadata().catch(() => undefined))?.info;
    const pages: string[] = [];
    for (let n = 1; n <= doc.numPages; n++) {
      const content = await (await doc.getPage(n)).getTextContent();
      pages.push(content.items.map((item) => ('str' in item ? item.str + (item.hasEOL ? '\n' : '') : '')).join(''));
    }
    const title = typeof info?.Title === 'string' ? info.Title.trim() : '';
    return { title: title || fallbackTitle, text: pages.join('\n\n') };
  } finally {
    await task.destroy();
  }
}

async function docx(bytes: Uint8Array, fallbackTitle: string): Promise<Extracted> {
  const mammoth = (await import('mammoth')).default;
  const { value } = await mammoth.extractRawText({ buffer: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) });
  const first = value.split('\n').find((line) => line.trim().length > 0)?.trim();
  return { title: first && first.length <= 200 ? first : fallbackTitle, text: value };
}
