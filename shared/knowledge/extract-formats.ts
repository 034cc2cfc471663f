// The document readers, each a well-kept library, run inside an extraction worker (extract-worker.ts), never
// on the request thread: PDF with pdf.js, Word with mammoth, HTML with html-to-text. Each input is checked
// against caps first (nesting depth, pages, uncompressed size), so a hostile document is refused before its
// reader spends the worker's time and memory on it; the worker's deadline and heap limit catch the rest.
import { Parser } from 'htmlparser2';
import yauzl from 'yauzl';
import { ExtractionError, type Extracted } from './extract.js';

/** Deepest HTML element nesting read (browsers' own parsers stop nesting at 512). */
export const MAX_HTML_DEPTH = 512;
/** Most HTML elements in one page. */
export const MAX_HTML_ELEMENTS = 200_000;
/** Most pages of a PDF read. */
export const MAX_PDF_PAGES = 2_000;
/** Most bytes a DOCX's parts may hold uncompressed, together (a zip bomb declares far more). */
export const MAX_DOCX_UNCOMPRESSED_BYTES = 64 * 1024 * 1024;
/** Most characters of text kept from one document. */
export const MAX_TEXT_CHARS = 16 * 1024 * 1024;

const utf8 = new TextDecoder('utf-8', { fatal: true });

export async function readFormat(bytes: Uint8Array, format: string, fallbackTitle: string): Promise<Extracted> {
  switch (format) {
    case '.html':
    case '.htm':
      return html(utf8.decode(bytes), fallbackTitle);
    case '.pdf':
      return pdf(bytes, fallbackTitle);
    case '.docx':
      return docx(bytes, fallbackTitle);
    default:
      throw new ExtractionError(`${format} documents are not read in a worker`);
  }
}

const capped = (text: string) => (text.length > MAX_TEXT_CHARS ? text.slice(0, MAX_TEXT_CHARS) : text);

/** Refuses a page nested deeper, or with more elements, than the caps, in one linear pass of the tokenizer. */
function checkHtmlShape(source: string): void {
  let depth = 0;
  let elements = 0;
  let problem: string | undefined;
  const parser = new Parser({
    onopentag() {
      elements++;
      depth++;
      if (depth > MAX_HTML_DEPTH) problem ??= `the HTML nests elements deeper than ${MAX_HTML_DEPTH} levels`;
      if (elements > MAX_HTML_ELEMENTS) problem ??= `the HTML has more than ${MAX_HTML_ELEMENTS} elements`;
      if (problem) parser.pause();
    },
    onclosetag() {
      depth--;
    },
  });
  parser.end(source);
  if (problem) throw new ExtractionError(problem);
}

async function html(source: string, fallbackTitle: string): Promise<Extracted> {
  checkHtmlShape(source);
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
  return { title: title || fallbackTitle, text: capped(text) };
}

let pdfReady: Promise<typeof import('pdfjs-dist/legacy/build/pdf.mjs')> | undefined;

/**
 * pdf.js with its worker module loaded into this thread (the extraction worker is the thread pdf.js would
 * start): imported here, so the bundle carries it, and pdf.js never looks for a file of its own.
 */
const loadPdf = () =>
  (pdfReady ??= (async () => {
    // @ts-expect-error pdf.js ships no type declarations for its worker module
    const worker: unknown = await import('pdfjs-dist/legacy/build/pdf.worker.mjs');
    (globalThis as { pdfjsWorker?: unknown }).pdfjsWorker = worker;
    return import('pdfjs-dist/legacy/build/pdf.mjs');
  })());

async function pdf(bytes: Uint8Array, fallbackTitle: string): Promise<Extracted> {
  const { getDocument, VerbosityLevel } = await loadPdf();
  // A copy: pdf.js transfers (detaches) the buffer it is given.
  const task = getDocument({ data: new Uint8Array(bytes), isEvalSupported: false, disableFontFace: true, useSystemFonts: false, verbosity: VerbosityLevel.ERRORS });
  try {
    const doc = await task.promise;
    if (doc.numPages > MAX_PDF_PAGES) throw new ExtractionError(`the PDF has ${doc.numPages} pages; at most ${MAX_PDF_PAGES} are read`);
    const info: { Title?: unknown } | undefined = (await doc.getMetadata().catch(() => undefined))?.info;
    const pages: string[] = [];
    let length = 0;
    for (let n = 1; n <= doc.numPages && length < MAX_TEXT_CHARS; n++) {
      const content = await (await doc.getPage(n)).getTextContent();
      const page = content.items.map((item) => ('str' in item ? item.str + (item.hasEOL ? '\n' : '') : '')).join('');
      length += page.length;
      pages.push(page);
    }
    const title = typeof info?.Title === 'string' ? info.Title.trim() : '';
    return { title: title || fallbackTitle, text: capped(pages.join('\n\n')) };
  } finally {
    await task.destroy();
  }
}

/** The sizes a DOCX (a zip) declares for its parts: refused when they add up past the cap. */
async function checkDocxSize(bytes: Uint8Array): Promise<void> {
  const zip = await new Promise<yauzl.ZipFile>((resolve, reject) =>
    yauzl.fromBuffer(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), { lazyEntries: true }, (e, z) => (e ? reject(new ExtractionError('the DOCX is not a valid zip file')) : resolve(z))),
  );
  let total = 0;
  await new Promise<void>((resolve, reject) => {
    zip.on('entry', (entry: yauzl.Entry) => {
      total += entry.uncompressedSize;
      if (total > MAX_DOCX_UNCOMPRESSED_BYTES) {
        zip.close();
        reject(new ExtractionError(`the DOCX holds more than ${MAX_DOCX_UNCOMPRESSED_BYTES / 1024 / 1024} MiB uncompressed`));
        return;
      }
      zip.readEntry();
    });
    zip.on('end', () => resolve());
    zip.on('error', () => reject(new ExtractionError('the DOCX is not a valid zip file')));
    zip.readEntry();
  });
}

async function docx(bytes: Uint8Array, fallbackTitle: string): Promise<Extracted> {
  await checkDocxSize(bytes);
  const mammoth = (await import('mammoth')).default;
  const { value } = await mammoth.extractRawText({ buffer: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) });
  const first = value.split('\n').find((line) => line.trim().length > 0)?.trim();
  return { title: first && first.length <= 200 ? first : fallbackTitle, text: capped(value) };
}
