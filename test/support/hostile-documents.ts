// Hostile documents for the extraction bounds: each made here, small on disk or on the wire, and each one
// that once froze or crashed the service (deep HTML, unclosed inline tags, a 10,000-page PDF, a compressed
// stream bomb in a PDF, a DOCX of hundreds of MiB of XML, a DOCX whose zip lies about its part's size).
import { once } from 'node:events';
import { createDeflate, createDeflateRaw, deflateRawSync } from 'node:zlib';
import { PDFDocument } from 'pdf-lib';
import yazl from 'yazl';

export const deepHtml = (depth = 200_000) =>
  Buffer.from(`<html><body>${'<div>'.repeat(depth)}deep${'</div>'.repeat(depth)}</body></html>`);

export const unclosedInlineHtml = (count = 300_000) => Buffer.from(`<html><body>${'<b>x'.repeat(count)}</body></html>`);

/** A PDF of `pages` blank pages. */
export async function manyPagesPdf(pages = 10_000): Promise<Buffer> {
  const pdf = await PDFDocument.create();
  for (let i = 0; i < pages; i++) pdf.addPage([200, 200]);
  return Buffer.from(await pdf.save({ useObjectStreams: true }));
}

/** `mib` MiB of `fill` deflated (zlib, or raw for a zip): a few hundred KiB that inflate to the whole. */
async function deflated(mib: number, fill: string, { prefix = '', raw = false } = {}): Promise<Buffer> {
  const deflate = raw ? createDeflateRaw({ level: 9 }) : createDeflate({ level: 9 });
  const chunks: Buffer[] = [];
  deflate.on('data', (c: Buffer) => chunks.push(c));
  deflate.write(prefix);
  const block = Buffer.alloc(1024 * 1024, fill);
  for (let i = 0; i < mib; i++) if (!deflate.write(block)) await once(deflate, 'drain');
  deflate.end();
  await once(deflate, 'end');
  return Buffer.concat(chunks);
}

/**
 * A one-page PDF whose content stream inflates to `mib` MiB of text-showing operators, or with `fill`, to a
 * line of text and then `mib` MiB of `fill` (spaces: a page a reader can finish, its stream held whole).
 */
export async function compressedStreamBombPdf(mib = 256, fill?: string): Promise<Buffer> {
  const stream =
    fill === undefined
      ? await deflated(mib, '(A) Tj ', { prefix: 'BT /F1 12 Tf 10 10 Td ' })
      : await deflated(mib, fill, { prefix: 'BT /F1 12 Tf 10 10 Td (Hello) Tj ET\n' });
  const head = '%PDF-1.4\n';
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    null,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ];
  const parts: Buffer[] = [Buffer.from(head)];
  const offsets: number[] = [];
  let length = head.length;
  objects.forEach((body, i) => {
    offsets.push(length);
    const part =
      body === null
        ? Buffer.concat([
            Buffer.from(`${i + 1} 0 obj\n<< /Length ${stream.length} /Filter /FlateDecode >>\nstream\n`),
            stream,
            Buffer.from('\nendstream\nendobj\n'),
          ])
        : Buffer.from(`${i + 1} 0 obj\n${body}\nendobj\n`);
    parts.push(part);
    length += part.length;
  });
  const entries = offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('');
  const xref =
    `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${entries}` +
    `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${length}\n%%EOF\n`;
  parts.push(Buffer.from(xref));
  return Buffer.concat(parts);
}

/** A DOCX whose document part inflates to `mib` MiB of paragraphs. */
export async function docxBomb(mib = 200): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  zip.addBuffer(
    Buffer.from(
      '<?xml version="1.0"?><Types ' +
        'xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ' +
        'ContentType="application/xml"/><Override PartName="/word/document.xml" ' +
        'ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>',
    ),
    '[Content_Types].xml',
  );
  const paragraph = '<w:p><w:r><w:t>bomb</w:t></w:r></w:p>';
  const paragraphs = paragraph.repeat(Math.floor((mib * 1024 * 1024) / paragraph.length));
  const body = Buffer.from(
    '<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">' +
      `<w:body>${paragraphs}</w:body></w:document>`,
  );
  zip.addBuffer(body, 'word/document.xml', { compress: true });
  zip.end();
  const chunks: Buffer[] = [];
  for await (const c of zip.outputStream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** A PDF whose cross-reference table and trailer point at nothing: no reader can find its pages. */
export const brokenXrefPdf = () =>
  Buffer.from(
    `%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog /Pages 7 0 R >>\nendobj\nxref\n0 3\n0000000000 ` +
      `65535 f \nzzzzzzzzzz 00000 n \n9999999999 00000 n \ntrailer\n<< /Size 3 /Root 5 0 R ` +
      `>>\nstartxref\n123456789\n%%EOF\n`,
    'latin1',
  );

/** Little-endian fields of a zip header: [value, bytes] pairs. */
const fields = (...values: [number, 2 | 4][]) =>
  Buffer.concat(
    values.map(([v, n]) => (n === 2 ? Buffer.from([v & 0xff, v >>> 8]) : Buffer.from(Uint32Array.of(v).buffer))),
  );

interface ZipPart {
  name: string;
  /** The part as stored (deflated). */
  data: Buffer;
  /** What the zip says the part inflates to. */
  declaredSize: number;
}

/**
 * A zip of deflated parts, written header by header, each part's sizes as the caller declares them (CRC 0: no reader
 * here checks it).
 */
function zipWithDeclaredSizes(parts: ZipPart[]): Buffer {
  const locals: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  for (const { name, data, declaredSize } of parts) {
    const fileName = Buffer.from(name);
    // version 20, no flags, deflate (8), time and date 0, CRC 0, compressed and uncompressed sizes, name length, no
    // extra field
    const common = fields(
      [20, 2],
      [0, 2],
      [8, 2],
      [0, 2],
      [0, 2],
      [0, 4],
      [data.length, 4],
      [declaredSize, 4],
      [fileName.length, 2],
      [0, 2],
    );
    const local = Buffer.concat([fields([0x04034b50, 4]), common, fileName, data]);
    // made by 20; no comment, disk 0, no attributes, the local header's offset
    central.push(
      Buffer.concat([
        fields([0x02014b50, 4], [20, 2]),
        common,
        fields([0, 2], [0, 2], [0, 2], [0, 4], [offset, 4]),
        fileName,
      ]),
    );
    locals.push(local);
    offset += local.length;
  }
  const directory = Buffer.concat(central);
  const end = fields(
    [0x06054b50, 4],
    [0, 2],
    [0, 2],
    [parts.length, 2],
    [parts.length, 2],
    [directory.length, 4],
    [offset, 4],
    [0, 2],
  );
  return Buffer.concat([...locals, directory, end]);
}

/**
 * A DOCX whose `word/document.xml` declares `declaredBytes` (1,000) and inflates to `mib` MiB of paragraphs:
 * a reader that trusts the zip's sizes inflates the whole part before it finds out.
 */
export async function docxLyingSizes(mib = 1024, declaredBytes = 1000): Promise<Buffer> {
  const types = Buffer.from(
    '<?xml version="1.0"?><Types ' +
      'xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ' +
      'ContentType="application/xml"/><Override PartName="/word/document.xml" ' +
      'ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>',
  );
  const head =
    '<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>';
  const document = await deflated(mib, '<w:p><w:r><w:t>bomb</w:t></w:r></w:p>', { prefix: head, raw: true });
  return zipWithDeclaredSizes([
    { name: '[Content_Types].xml', data: deflateRawSync(types), declaredSize: types.length },
    { name: 'word/document.xml', data: document, declaredSize: declaredBytes },
  ]);
}
