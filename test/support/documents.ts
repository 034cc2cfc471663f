// Documents of the indexed formats, made by real writers (pdf-lib, docx; PowerPoint and Excel as their Office
// Open XML parts zipped with yazl): each about its own subject, so a prompt equal to a document's text finds
// that document first.
import { Document, HeadingLevel, Packer, Paragraph } from 'docx';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import yazl from 'yazl';

export const TEXTS = {
  'penguins.txt':
    'Emperor penguins breed during the Antarctic winter and huddle together against the freezing wind while ' +
    'the males keep the eggs warm on their feet.',
  'volcanoes.md':
    'Basaltic magma rises through fissures in the crust and erupts as lava fountains that build shield ' +
    'volcanoes layer upon layer over thousands of years.',
  'coffee.html':
    'Espresso is brewed by forcing hot water through finely ground roasted coffee beans under nine bars of ' +
    'pressure to extract a concentrated shot with crema.',
  'revenue.pdf':
    'Quarterly revenue of the Lisbon office grew by twelve percent thanks to new enterprise contracts signed ' +
    'with logistics companies in Portugal.',
  'bicycles.docx':
    'Bicycle chain maintenance means cleaning the drivetrain with degreaser then applying lubricant to each ' +
    'roller and wiping away the excess oil.',
} as const;

export type DocumentName = keyof typeof TEXTS;

export const TITLES: Record<DocumentName, string> = {
  'penguins.txt': 'penguins.txt',
  'volcanoes.md': 'Volcanoes',
  'coffee.html': 'Coffee brewing',
  'revenue.pdf': 'Lisbon revenue report',
  'bicycles.docx': 'Bicycle care',
};

export async function pdfOf(title: string, text: string): Promise<Buffer> {
  const pdf = await PDFDocument.create();
  pdf.setTitle(title);
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  const page = pdf.addPage([612, 792]);
  // One line per few words: the page is narrower than the sentence.
  const words = text.split(' ');
  for (let i = 0, y = 740; i < words.length; i += 8, y -= 18)
    page.drawText(words.slice(i, i + 8).join(' '), { x: 50, y, size: 12, font });
  return Buffer.from(await pdf.save());
}

export async function docxOf(title: string, text: string): Promise<Buffer> {
  const doc = new Document({
    sections: [{ children: [new Paragraph({ text: title, heading: HeadingLevel.TITLE }), new Paragraph(text)] }],
  });
  return Packer.toBuffer(doc);
}

export const htmlOf = (title: string, text: string) =>
  Buffer.from(
    `<!doctype html><html><head><title>${title}</title></head><body><nav><a ` +
      `href="/">Home</a></nav><p>${text}</p></body></html>`,
  );

/** The five documents as bytes, with their content types. */
export async function documentFiles(
  texts: Record<DocumentName, string> = TEXTS,
): Promise<Record<DocumentName, { bytes: Buffer; type: string }>> {
  return {
    'penguins.txt': { bytes: Buffer.from(texts['penguins.txt']), type: 'text/plain' },
    'volcanoes.md': {
      bytes: Buffer.from(`# ${TITLES['volcanoes.md']}\n\n${texts['volcanoes.md']}\n`),
      type: 'text/markdown',
    },
    'coffee.html': { bytes: htmlOf(TITLES['coffee.html'], texts['coffee.html']), type: 'text/html' },
    'revenue.pdf': { bytes: await pdfOf(TITLES['revenue.pdf'], texts['revenue.pdf']), type: 'application/pdf' },
    'bicycles.docx': {
      bytes: await docxOf(TITLES['bicycles.docx'], texts['bicycles.docx']),
      type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
    },
  };
}

/** A file that says it is a PDF and is not one. */
export const CORRUPT_PDF = Buffer.from(
  '%PDF-1.7\n1 0 obj << /Type /Catalog >> garbage that is not a PDF at all\n%%EOF',
);

async function zipOf(parts: Record<string, string>): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  for (const [name, text] of Object.entries(parts)) zip.addBuffer(Buffer.from(text), name);
  zip.end();
  const chunks: Buffer[] = [];
  for await (const c of zip.outputStream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

const contentTypes = (overrides: Record<string, string>) => {
  const listed = Object.entries(overrides)
    .map(([part, type]) => `<Override PartName="${part}" ContentType="${type}"/>`)
    .join('');
  return (
    '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">' +
    `<Default Extension="xml" ContentType="application/xml"/>${listed}</Types>`
  );
};

/** A presentation of one slide per entry, each slide's lines as paragraphs. */
export function pptxOf(slides: string[][]): Promise<Buffer> {
  const parts: Record<string, string> = {
    '[Content_Types].xml': contentTypes({
      '/ppt/presentation.xml': 'application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml',
    }),
    'ppt/presentation.xml':
      '<?xml version="1.0"?><p:presentation xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"/>',
  };
  slides.forEach((lines, i) => {
    const paragraphs = lines
      .map((l) => `<a:p><a:r><a:t>${l.replace(/&/g, '&amp;').replace(/</g, '&lt;')}</a:t></a:r></a:p>`)
      .join('');
    parts[`ppt/slides/slide${i + 1}.xml`] =
      `<?xml version="1.0"?><p:sld xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main" ` +
      `xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main">` +
      `<p:cSld><p:spTree><p:sp><p:txBody>${paragraphs}</p:txBody></p:sp></p:spTree></p:cSld></p:sld>`;
  });
  return zipOf(parts);
}

/** A workbook of one sheet: text cells as shared strings, numbers as values. */
export function xlsxOf(sheetName: string, rows: (string | number)[][]): Promise<Buffer> {
  const strings: string[] = [];
  const cell = (v: string | number) => {
    if (typeof v === 'number') return `<c><v>${v}</v></c>`;
    strings.push(v);
    return `<c t="s"><v>${strings.length - 1}</v></c>`;
  };
  // The rows first: their text cells fill the shared strings.
  const sheetData = rows.map((r) => `<row>${r.map(cell).join('')}</row>`).join('');
  const sheet =
    '<?xml version="1.0"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">' +
    `<sheetData>${sheetData}</sheetData></worksheet>`;
  const sharedStrings = strings.map((s) => `<si><t>${s}</t></si>`).join('');
  return zipOf({
    '[Content_Types].xml': contentTypes({
      '/xl/workbook.xml': 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml',
    }),
    'xl/workbook.xml':
      `<?xml version="1.0"?><workbook ` +
      `xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheets><sheet name="${sheetName}" ` +
      `sheetId="1"/></sheets></workbook>`,
    'xl/worksheets/sheet1.xml': sheet,
    'xl/sharedStrings.xml':
      '<?xml version="1.0"?><sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">' +
      `${sharedStrings}</sst>`,
  });
}
