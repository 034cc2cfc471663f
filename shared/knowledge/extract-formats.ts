// The document readers, each a well-kept library, run inside an extraction worker (extract-worker.ts), never
// on the request thread: PDF with pdf.js, Word with mammoth, HTML with html-to-text, PowerPoint and Excel
// as their Office Open XML parts (yauzl for the zip, htmlparser2 in XML mode for the parts). Each input is
// checked against caps first (nesting depth, pages, uncompressed size), so a hostile document is refused
// before its reader spends the worker's time and memory on it; the worker's deadline and heap limit catch the rest.
import { Parser } from 'htmlparser2';
import yauzl from 'yauzl';
import { ExtractionError, type Extracted } from './extract.js';

/** Deepest HTML element nesting read (browsers' own parsers stop nesting at 512). */
export const MAX_HTML_DEPTH = 512;
/** Most HTML elements in one page. */
export const MAX_HTML_ELEMENTS = 200_000;
/** Most pages of a PDF read. */
export const MAX_PDF_PAGES = 2_000;
/**
 * Most bytes an Office document's (DOCX, PPTX, XLSX) parts may hold uncompressed, together (a zip bomb declares far
 * more).
 */
export const MAX_OFFICE_UNCOMPRESSED_BYTES = 64 * 1024 * 1024;
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
    case '.pptx':
      return pptx(bytes, fallbackTitle);
    case '.xlsx':
      return xlsx(bytes, fallbackTitle);
    case '.txt':
    case '.md':
      return { title: fallbackTitle, text: capped(utf8.decode(bytes)) };
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
    Object.assign(globalThis, { pdfjsWorker: worker });
    return import('pdfjs-dist/legacy/build/pdf.mjs');
  })());

/** Loads the readers that take long to load (pdf.js), so a fresh worker's first document does not wait for them. */
export const loadReaders = async (): Promise<void> => {
  await loadPdf();
};

async function pdf(bytes: Uint8Array, fallbackTitle: string): Promise<Extracted> {
  const { getDocument, VerbosityLevel } = await loadPdf();
  // A copy: pdf.js transfers (detaches) the buffer it is given.
  const task = getDocument({
    data: new Uint8Array(bytes),
    isEvalSupported: false,
    disableFontFace: true,
    useSystemFonts: false,
    verbosity: VerbosityLevel.ERRORS,
  });
  try {
    const doc = await task.promise;
    if (doc.numPages > MAX_PDF_PAGES)
      throw new ExtractionError(`the PDF has ${doc.numPages} pages; at most ${MAX_PDF_PAGES} are read`);
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

const openZip = (bytes: Uint8Array, kind: string) =>
  new Promise<yauzl.ZipFile>((resolve, reject) =>
    yauzl.fromBuffer(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), { lazyEntries: true }, (e, z) =>
      e ? reject(new ExtractionError(`the ${kind} is not a valid zip file`)) : resolve(z),
    ),
  );

/**
 * The parts of an Office document (a zip) that `wanted` picks, read into memory, after the sizes the zip
 * declares for all its parts are checked against the cap (yauzl holds each part to its declared size).
 */
async function officeParts(
  bytes: Uint8Array,
  kind: string,
  wanted: (name: string) => boolean,
): Promise<Map<string, Buffer>> {
  const tooLarge = () =>
    new ExtractionError(`the ${kind} holds more than ${MAX_OFFICE_UNCOMPRESSED_BYTES / 1024 / 1024} MiB uncompressed`);
  const invalid = () => new ExtractionError(`the ${kind} is not a valid zip file`);
  const zip = await openZip(bytes, kind);
  const entries: yauzl.Entry[] = [];
  let total = 0;
  await new Promise<void>((resolve, reject) => {
    zip.on('entry', (entry: yauzl.Entry) => {
      total += entry.uncompressedSize;
      if (total > MAX_OFFICE_UNCOMPRESSED_BYTES) {
        zip.close();
        reject(tooLarge());
        return;
      }
      if (wanted(entry.fileName)) entries.push(entry);
      zip.readEntry();
    });
    zip.on('end', () => resolve());
    zip.on('error', () => reject(invalid()));
    zip.readEntry();
  });
  const parts = new Map<string, Buffer>();
  for (const entry of entries) {
    const data = await new Promise<Buffer>((resolve, reject) =>
      zip.openReadStream(entry, (e, stream) => {
        if (e) return reject(invalid());
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', () => resolve(Buffer.concat(chunks)));
        stream.on('error', () => reject(invalid()));
      }),
    );
    parts.set(entry.fileName, data);
  }
  zip.close();
  return parts;
}

async function docx(bytes: Uint8Array, fallbackTitle: string): Promise<Extracted> {
  await officeParts(bytes, 'DOCX', () => false);
  const mammoth = (await import('mammoth')).default;
  const { value } = await mammoth.extractRawText({
    buffer: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength),
  });
  const first = value
    .split('\n')
    .find((line) => line.trim().length > 0)
    ?.trim();
  return { title: first && first.length <= 200 ? first : fallbackTitle, text: capped(value) };
}

/**
 * The text of the elements named `textTag` in an XML part, a line per `lineTag` element (and `cellTag` ones
 * tab-separated).
 */
function xmlText(
  xml: Buffer,
  { textTag, lineTag, cellTag }: { textTag: string; lineTag: string; cellTag?: string },
): string[] {
  const lines: string[] = [];
  let line: string[] = [];
  let cell = '';
  let inText = 0;
  const parser = new Parser(
    {
      onopentag(name) {
        if (name === textTag) inText++;
      },
      ontext(text) {
        if (inText > 0) cell += text;
      },
      onclosetag(name) {
        if (name === textTag) inText--;
        else if (cellTag !== undefined && name === cellTag) {
          line.push(cell);
          cell = '';
        } else if (name === lineTag) {
          if (cellTag === undefined) line.push(cell);
          cell = '';
          lines.push(line.join('\t'));
          line = [];
        }
      },
    },
    { xmlMode: true, decodeEntities: true },
  );
  parser.end(xml.toString('utf8'));
  return lines;
}

const partNumber = (name: string) => Number(/(\d+)\.xml$/.exec(name)?.[1] ?? 0);

/** A presentation's slides in order, each its paragraphs (DrawingML `a:t` runs in `a:p` paragraphs). */
async function pptx(bytes: Uint8Array, fallbackTitle: string): Promise<Extracted> {
  const slide = /^ppt\/slides\/slide\d+\.xml$/;
  const parts = await officeParts(bytes, 'PPTX', (name) => slide.test(name));
  const slides = [...parts.entries()].sort(([a], [b]) => partNumber(a) - partNumber(b));
  const text = slides
    .map(
      ([name, xml]) =>
        `Slide ${partNumber(name)}:\n${xmlText(xml, { textTag: 'a:t', lineTag: 'a:p' })
          .filter((l) => l.trim().length > 0)
          .join('\n')}`,
    )
    .join('\n\n');
  const first = slides[0]
    ? xmlText(slides[0][1], { textTag: 'a:t', lineTag: 'a:p' })
        .find((l) => l.trim().length > 0)
        ?.trim()
    : undefined;
  return { title: first && first.length <= 200 ? first : fallbackTitle, text: capped(text) };
}

/** A workbook's sheets in order, a line per row, cells tab-separated (shared strings resolved). */
async function xlsx(bytes: Uint8Array, fallbackTitle: string): Promise<Extracted> {
  const sheet = /^xl\/worksheets\/sheet\d+\.xml$/;
  const parts = await officeParts(
    bytes,
    'XLSX',
    (name) => sheet.test(name) || name === 'xl/sharedStrings.xml' || name === 'xl/workbook.xml',
  );
  const sharedStrings = parts.get('xl/sharedStrings.xml');
  const shared = sharedStrings ? xmlText(sharedStrings, { textTag: 't', lineTag: 'si' }) : [];
  const workbook = parts.get('xl/workbook.xml');
  const names = workbook ? sheetNames(workbook) : [];
  const sheets = [...parts.entries()]
    .filter(([name]) => sheet.test(name))
    .sort(([a], [b]) => partNumber(a) - partNumber(b));
  const text = sheets
    .map(
      ([name, xml]) =>
        `Sheet ${names[partNumber(name) - 1] ?? partNumber(name)}:\n${sheetRows(xml, shared).join('\n')}`,
    )
    .join('\n\n');
  return { title: fallbackTitle, text: capped(text) };
}

function sheetNames(xml: Buffer): string[] {
  const names: string[] = [];
  new Parser(
    { onopentag: (name, attrs) => name === 'sheet' && names.push(attrs.name ?? '') },
    { xmlMode: true, decodeEntities: true },
  ).end(xml.toString('utf8'));
  return names;
}

/** Rows of a worksheet: a cell's value is its shared string (`t="s"`), its inline string, or its value as written. */
function sheetRows(xml: Buffer, shared: readonly string[]): string[] {
  const rows: string[] = [];
  let row: string[] = [];
  let type: string | undefined;
  let value = '';
  let reading = false;
  new Parser(
    {
      onopentag(name, attrs) {
        if (name === 'c') {
          type = attrs.t;
          value = '';
        } else if (name === 'v' || name === 't') reading = true;
      },
      ontext(text) {
        if (reading) value += text;
      },
      onclosetag(name) {
        if (name === 'v' || name === 't') reading = false;
        else if (name === 'c') row.push(type === 's' ? (shared[Number(value)] ?? '') : value);
        else if (name === 'row') {
          rows.push(row.join('\t'));
          row = [];
        }
      },
    },
    { xmlMode: true, decodeEntities: true },
  ).end(xml.toString('utf8'));
  return rows;
}
