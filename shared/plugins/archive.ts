// Reads a package archive (ZIP; NuGet files are ZIPs too) with yauzl, defending against hostile archives:
// entry count, per-entry and total uncompressed size and compression-ratio limits, no path traversal,
// no absolute paths, no symlinks. Nothing is extracted to disk: the entries asked for are read into memory
// (the manifest on upload; a Python package's files when one of its plugins runs).
import yauzl from 'yauzl';
import { badRequest } from '../errors.js';

export const ARCHIVE_LIMITS = {
  entries: 1000,
  entryBytes: 50 * 1024 * 1024,
  totalBytes: 200 * 1024 * 1024,
  /** Uncompressed:compressed, checked for entries over 1 MiB uncompressed. */
  ratio: 100,
  manifestBytes: 1024 * 1024,
};

export interface ArchiveContents {
  names: string[];
  /** Bytes of the entries asked for, by name. */
  files: Map<string, Buffer>;
}

const bad = (message: string) => badRequest(`Invalid package archive: ${message}`);

function checkName(name: string): void {
  if (name.includes('\\')) throw bad(`entry ${JSON.stringify(name)} uses backslashes`);
  if (name.startsWith('/') || /^[A-Za-z]:/.test(name)) throw bad(`entry ${JSON.stringify(name)} has an absolute path`);
  if (name.split('/').includes('..')) throw bad(`entry ${JSON.stringify(name)} leaves the package (path traversal)`);
}

/**
 * Lists the archive and reads the entries `wanted` selects, each at most `maxEntryBytes` (the manifest's
 * bound by default); throws 400 for hostile archives.
 */
export function readArchive(bytes: Buffer, wanted: (name: string) => boolean, maxEntryBytes = ARCHIVE_LIMITS.manifestBytes): Promise<ArchiveContents> {
  return new Promise((resolve, reject) => {
    // Its own name checks throw before ours could name the entry: ours run first, on the raw names.
    yauzl.fromBuffer(bytes, { lazyEntries: true, validateEntrySizes: true, strictFileNames: false, decodeStrings: true }, (openError, zip) => {
      if (openError) return reject(bad(openError.message));
      if (zip.entryCount > ARCHIVE_LIMITS.entries) {
        zip.close();
        return reject(bad(`${zip.entryCount} entries, more than ${ARCHIVE_LIMITS.entries}`));
      }
      const names: string[] = [];
      const files = new Map<string, Buffer>();
      let total = 0;
      const fail = (e: Error) => {
        zip.close();
        reject(e);
      };
      zip.on('error', (e: Error) => fail(bad(e.message)));
      zip.on('end', () => resolve({ names, files }));
      zip.on('entry', (entry: yauzl.Entry) => {
        try {
          checkName(entry.fileName);
          const mode = (entry.externalFileAttributes >>> 16) & 0o170000;
          if (mode === 0o120000) throw bad(`entry ${JSON.stringify(entry.fileName)} is a symbolic link`);
          if (entry.uncompressedSize > ARCHIVE_LIMITS.entryBytes) throw bad(`entry ${JSON.stringify(entry.fileName)} is larger than ${ARCHIVE_LIMITS.entryBytes} bytes`);
          total += entry.uncompressedSize;
          if (total > ARCHIVE_LIMITS.totalBytes) throw bad(`more than ${ARCHIVE_LIMITS.totalBytes} bytes uncompressed`);
          if (entry.uncompressedSize > 1024 * 1024 && entry.uncompressedSize / Math.max(1, entry.compressedSize) > ARCHIVE_LIMITS.ratio) {
            throw bad(`entry ${JSON.stringify(entry.fileName)} expands more than ${ARCHIVE_LIMITS.ratio}:1 (a compression bomb)`);
          }
        } catch (e) {
          return fail(e as Error);
        }
        names.push(entry.fileName);
        if (!wanted(entry.fileName) || entry.fileName.endsWith('/')) return zip.readEntry();
        if (entry.uncompressedSize > maxEntryBytes) return fail(bad(`${entry.fileName} is larger than ${maxEntryBytes} bytes`));
        zip.openReadStream(entry, (streamError, stream) => {
          if (streamError) return fail(bad(streamError.message));
          const chunks: Buffer[] = [];
          stream.on('data', (c: Buffer) => chunks.push(c));
          stream.on('error', (e) => fail(bad(e.message)));
          stream.on('end', () => {
            files.set(entry.fileName, Buffer.concat(chunks));
            zip.readEntry();
          });
        });
      });
      zip.readEntry();
    });
  });
}
