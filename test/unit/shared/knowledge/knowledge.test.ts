// The pure parts of knowledge: the filter grammar, partitioning by tokens, text extraction of the five formats,
// and the Cosmos DB vector search query (which the local Cosmos-compatible server cannot run).
import { encode } from 'gpt-tokenizer/encoding/cl100k_base';
import { afterAll, describe, expect, it } from 'vitest';
import { DomainError } from '../../../../shared/errors.js';
import { vectorSearchQuery } from '../../../../shared/knowledge/cosmos-vector-index.js';
import { searchTerms } from '../../../../shared/knowledge/vector-index.js';
import { ExtractionError, extractText as extractWith, formatOf } from '../../../../shared/knowledge/extract.js';
import { ExtractionPool } from '../../../../shared/knowledge/extract-pool.js';
import { parseFilter } from '../../../../shared/knowledge/filter.js';
import { partitionText } from '../../../../shared/knowledge/partition.js';
import { underPrefix } from '../../../../shared/knowledge/sources.js';
import { CORRUPT_PDF, documentFiles, htmlOf, TEXTS, TITLES, type DocumentName } from '../../../support/documents.js';
import {
  compressedStreamBombPdf,
  deepHtml,
  docxBomb,
  manyPagesPdf,
  unclosedInlineHtml,
} from '../../../support/hostile-documents.js';

describe('index filter expressions', () => {
  it('parses eq clauses on source and file_name joined by and, with quotes doubled inside values', () => {
    expect(parseFilter(undefined)).toEqual([]);
    expect(parseFilter('  ')).toEqual([]);
    expect(parseFilter("source eq 'docs/a.txt'")).toEqual([{ field: 'source', value: 'docs/a.txt' }]);
    expect(parseFilter("File_Name EQ 'it''s.md' AND source eq 'x'")).toEqual([
      { field: 'file_name', value: "it's.md" },
      { field: 'source', value: 'x' },
    ]);
  });

  it.each([
    ["title eq 'x'", 'unknown field title'],
    ["source ne 'x'", 'unsupported operator ne'],
    ["source eq 'x' or file_name eq 'y'", 'expected "and"'],
    ['source eq x', 'expected a clause'],
    ["source eq 'x' and", 'expected a clause'],
    ["source eq 'unterminated", 'expected a clause'],
  ])('refuses %s with a 400 naming the field', (expression, message) => {
    try {
      parseFilter(expression);
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(DomainError);
      expect((e as DomainError).kind).toBe('invalid');
      expect((e as DomainError).details[0]?.field).toBe('settings.agent_parameters.index_filter_expression');
      expect((e as DomainError).details[0]?.message).toContain(message);
    }
  });
});

describe('partitioning', () => {
  const text = Array.from({ length: 300 }, (_, i) => `word${i}`).join(' ');

  it('cuts windows of the size in tokens, each overlapping the last by the overlap', () => {
    const parts = partitionText(text, { sizeTokens: 100, overlapTokens: 20 });
    expect(parts.length).toBeGreaterThan(3);
    for (const p of parts) expect(encode(p).length).toBeLessThanOrEqual(100);
    // Consecutive partitions share text: the end of one starts the next.
    for (let i = 1; i < parts.length; i++) {
      const tail = (parts[i - 1] ?? '').split(' ').slice(-3).join(' ');
      expect(parts[i]).toContain(tail);
    }
    expect(parts.join(' ')).toContain('word299');
  });

  it('keeps a short text whole and gives nothing for blank text', () => {
    expect(partitionText('A short note.', { sizeTokens: 400, overlapTokens: 100 })).toEqual(['A short note.']);
    expect(partitionText(' \n\n ', { sizeTokens: 400, overlapTokens: 100 })).toEqual([]);
  });
});

const pool = new ExtractionPool({ size: 2, timeoutMs: 30_000 });
const extractText = (bytes: Uint8Array, format: string, title: string) =>
  extractWith(pool, bytes, { format, fallbackTitle: title });

describe('text extraction', () => {
  afterAll(() => pool.close());

  it.each(Object.keys(TEXTS) as DocumentName[])('reads %s with its title', async (name) => {
    const file = (await documentFiles())[name];
    const extracted = await extractText(file.bytes, formatOf(name) ?? '', name);
    expect(extracted.title).toBe(TITLES[name]);
    // PDF text comes back in lines as drawn; the words are the document's.
    expect(extracted.text.replace(/\s+/g, ' ')).toContain(TEXTS[name]);
  });

  it('refuses a corrupt PDF, text that is not UTF-8 and formats it does not read, with reasons', async () => {
    await expect(extractText(CORRUPT_PDF, '.pdf', 'x.pdf')).rejects.toThrow(ExtractionError);
    await expect(extractText(Buffer.from([0xff, 0xfe, 0x00, 0xc3]), '.txt', 'x.txt')).rejects.toThrow('not UTF-8');
    await expect(extractText(Buffer.from('x'), '.exe', 'x.exe')).rejects.toThrow('.exe documents are not indexed');
    await expect(extractText(Buffer.from('PK\u0003\u0004 not a zip'), '.docx', 'x.docx')).rejects.toThrow(
      ExtractionError,
    );
  });

  it('reads the format from the name, or for a web page without one from its content type', () => {
    expect(formatOf('docs/Report.PDF')).toBe('.pdf');
    expect(formatOf('https://example.com/guide?x=1', 'text/html; charset=utf-8')).toBe('.html');
    expect(formatOf('https://example.com/data.bin', 'application/octet-stream')).toBeUndefined();
  });
});

describe('web source prefixes', () => {
  it('allows a URL under a prefix of the same origin only', () => {
    const prefixes = ['https://docs.example.com/guide/'];
    expect(underPrefix('https://docs.example.com/guide/a.html', prefixes)).toBe(true);
    expect(underPrefix('https://docs.example.com/other/a.html', prefixes)).toBe(false);
    expect(underPrefix('https://docs.example.com.evil.test/guide/a.html', prefixes)).toBe(false);
    expect(underPrefix('http://docs.example.com/guide/a.html', prefixes)).toBe(false);
    expect(underPrefix('https://user:pw@docs.example.com/guide/a.html', prefixes)).toBe(false);
    expect(underPrefix('not a url', prefixes)).toBe(false);
  });
});

describe('full-text terms of a prompt', () => {
  it(
    'keeps words and tokens like part numbers whole, trims punctuation at their ends, lower-cases, drops ' +
      'repeats, at most 32',
    () => {
      expect(searchTerms('What does ERR-4711 mean? "Quoted", (part ZX-9000)... what')).toEqual([
        'what',
        'does',
        'err-4711',
        'mean',
        'quoted',
        'part',
        'zx-9000',
      ]);
      expect(searchTerms('?? -- …')).toEqual([]);
      expect(searchTerms(Array.from({ length: 50 }, (_, i) => `w${i}`).join(' '))).toHaveLength(32);
    },
  );
});

describe('the Cosmos DB vector search query', () => {
  it('is one VectorDistance query, best first, with the index, the expiry and the filters in its WHERE clause', () => {
    const q = vectorSearchQuery({
      index: 'docs',
      vector: [0.1, 0.2],
      top: 5,
      values: { source: 'a.txt', file_name: 'a.txt' },
      now: 1000,
    });
    expect(q.query).toBe(
      'SELECT TOP 5 c.key, c.part, c.source, c.file_name, c.title, c.text, VectorDistance(c.vector, @vector) ' +
        'AS score ' +
        ("FROM c WHERE c.pk = @index AND c.kind = 'partition' AND c.expires_at > @now AND c.source = @source " +
          'AND c.file_name = @file_name ') +
        ('AND (NOT IS_DEFINED(c.access_groups) OR EXISTS(SELECT VALUE g FROM g IN c.access_groups WHERE ' +
          'ARRAY_CONTAINS(@readers, g))) ') +
        'ORDER BY VectorDistance(c.vector, @vector)',
    );
    expect(q.parameters).toEqual([
      { name: '@index', value: 'docs' },
      { name: '@vector', value: [0.1, 0.2] },
      { name: '@now', value: 1000 },
      { name: '@source', value: 'a.txt' },
      { name: '@file_name', value: 'a.txt' },
      { name: '@readers', value: [] },
    ]);
  });

  it('ranks a hybrid search by RRF of the vector distance and the BM25 score of the terms', () => {
    const q = vectorSearchQuery({
      index: 'docs',
      vector: [0.1],
      top: 5,
      values: {},
      now: 1000,
      readers: 'everything',
      terms: ['err-4711', 'mean'],
    });
    expect(q.query).toContain(
      'ORDER BY RANK RRF(VectorDistance(c.vector, @vector), FullTextScore(c.text, @term0, @term1))',
    );
    expect(q.parameters?.slice(-2)).toEqual([
      { name: '@term0', value: 'err-4711' },
      { name: '@term1', value: 'mean' },
    ]);
  });

  it(
    "admits partitions for everyone and those of the readers' groups, case-insensitively; the service reads " +
      'everything',
    () => {
      const query = { index: 'docs', vector: [0.1], top: 5, values: {}, now: 1000 };
      expect(vectorSearchQuery({ ...query, readers: ['G-One', 'g-two', 'g-one'] }).parameters?.at(-1)).toEqual({
        name: '@readers',
        value: ['g-one', 'g-two'],
      });
      const all = vectorSearchQuery({ ...query, readers: 'everything' });
      expect(all.query).not.toContain('access_groups');
      expect((all.parameters ?? []).map((p) => p.name)).not.toContain('@readers');
    },
  );
});

describe('hostile documents', () => {
  // A short deadline: the bombs below are cut by it, or by a cap before it.
  const bounded = new ExtractionPool({ size: 2, timeoutMs: 5_000, heapMb: 256 });
  afterAll(() => bounded.close());
  const read = (bytes: Uint8Array, format: string) =>
    extractWith(bounded, bytes, { format, fallbackTitle: `x${format}` });

  it('refuses HTML nested deeper than the cap, in a worker, while this thread keeps running', async () => {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 10);
    await expect(read(deepHtml(), '.html')).rejects.toThrow(/nests elements deeper than 512/);
    await expect(read(unclosedInlineHtml(), '.html')).rejects.toThrow(/deeper than 512/);
    clearInterval(timer);
    expect(ticks).toBeGreaterThan(0);
  });

  it('refuses a 10,000-page PDF and a DOCX of 200 MiB of XML by their caps', async () => {
    await expect(read(await manyPagesPdf(), '.pdf')).rejects.toThrow(/10000 pages; at most 2000/);
    await expect(read(await docxBomb(), '.docx')).rejects.toThrow(/more than 64 MiB uncompressed/);
  });

  it('cuts a compressed-stream bomb at the deadline or the heap limit, and reads the next document', async () => {
    await expect(read(await compressedStreamBombPdf(), '.pdf')).rejects.toThrow(
      /took longer than 5 s|needs more than 256 MiB/,
    );
    const ok = await read(htmlOf('After', 'the pool reads on'), '.html');
    expect(ok.text).toContain('the pool reads on');
  });
});
