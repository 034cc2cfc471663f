// Reads a package archive (ZIP; NuGet files are ZIPs too) with yauzl, defending against hostile archives: entry count,
// per-entry and total uncompressed size, compression-ratio limits per entry and for the whole archive, and one path
// rule for every entry name as the archive stores it (no backslash, no absolute path, no traversal, no control
// character), no symlinks. Nothing is extracted to disk: the entries asked for are read into memory (the manifest on
// upload; a Python package's files when one of its plugins runs).
import yauzl from 'yauzl';
import { badRequest, toError } from '../errors.js';

export const ARCHIVE_LIMITS = {
  entries: 1000,
  entryBytes: 50 * 1024 * 1024,
  totalBytes: 200 * 1024 * 1024,
  /** Uncompressed:compressed, for each entry over 64 KiB uncompressed, and for the whole archive past 1 MiB. */
  ratio: 100,
  manifestBytes: 1024 * 1024,
};

export interface ArchiveContents {
  names: string[];
  /** Bytes of the entries asked for, by name. */
  files: Map<string, Buffer>;
}

const bad = (message: string) => badRequest(`Invalid package archive: ${message}`);

/** The path rule of every archive entry, on its name as stored (before any reader turns `\\` into `/`). */
function checkName(name: string): void {
  if (name.includes('\\')) throw bad(`entry ${JSON.stringify(name)} uses backslashes`);
  if (name.startsWith('/') || /^[A-Za-z]:/.test(name)) throw bad(`entry ${JSON.stringify(name)} has an absolute path`);
  if (name.split('/').includes('..')) throw bad(`entry ${JSON.stringify(name)} leaves the package (path traversal)`);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(name)) throw bad(`entry ${JSON.stringify(name)} has a control character`);
}

/**
 * An entry's name as the archive stores it: UTF-8 when its flag says so, else code page 437 (ASCII here). With
 * `decodeStrings: false` yauzl gives the name as bytes, whatever its typings say.
 */
function storedName(entry: yauzl.Entry): string {
  const name: string | Buffer = entry.fileName;
  return Buffer.isBuffer(name) ? name.toString((entry.generalPurposeBitFlag & 0x800) !== 0 ? 'utf8' : 'latin1') : name;
}

/**
 * Lists the archive and reads the entries `wanted` selects, each at most `maxEntryBytes` (the manifest's
 * bound by default); throws 400 for hostile archives.
 */
export function readArchive(
  bytes: Buffer,
  wanted: (name: string) => boolean,
  maxEntryBytes = ARCHIVE_LIMITS.manifestBytes,
): Promise<ArchiveContents> {
  return new Promise((resolve, reject) => {
    // Names stay bytes: yauzl would turn a backslash into a slash before any rule saw it.
    yauzl.fromBuffer(bytes, { lazyEntries: true, validateEntrySizes: true, decodeStrings: false }, (openError, zip) => {
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
        const name = storedName(entry);
        try {
          checkName(name);
          const mode = (entry.externalFileAttributes >>> 16) & 0o170000;
          if (mode === 0o120000) throw bad(`entry ${JSON.stringify(name)} is a symbolic link`);
          if (entry.uncompressedSize > ARCHIVE_LIMITS.entryBytes)
            throw bad(`entry ${JSON.stringify(name)} is larger than ${ARCHIVE_LIMITS.entryBytes} bytes`);
          total += entry.uncompressedSize;
          if (total > ARCHIVE_LIMITS.totalBytes) throw bad(`more than ${ARCHIVE_LIMITS.totalBytes} bytes uncompressed`);
          if (
            entry.uncompressedSize > 64 * 1024 &&
            entry.uncompressedSize / Math.max(1, entry.compressedSize) > ARCHIVE_LIMITS.ratio
          ) {
            throw bad(`entry ${JSON.stringify(name)} expands more than ${ARCHIVE_LIMITS.ratio}:1 (a compression bomb)`);
          }
          // Many entries each under the per-entry check still add up: the whole archive has the same bound.
          if (total > 1024 * 1024 && total / bytes.length > ARCHIVE_LIMITS.ratio)
            throw bad(`its entries expand more than ${ARCHIVE_LIMITS.ratio}:1 in all (a compression bomb)`);
        } catch (e) {
          return fail(toError(e));
        }
        names.push(name);
        if (!wanted(name) || name.endsWith('/')) return zip.readEntry();
        if (entry.uncompressedSize > maxEntryBytes) return fail(bad(`${name} is larger than ${maxEntryBytes} bytes`));
        zip.openReadStream(entry, (streamError, stream) => {
          if (streamError) return fail(bad(streamError.message));
          const chunks: Buffer[] = [];
          stream.on('data', (c: Buffer) => chunks.push(c));
          stream.on('error', (e) => fail(bad(e.message)));
          stream.on('end', () => {
            files.set(name, Buffer.concat(chunks));
            zip.readEntry();
          });
        });
      });
      zip.readEntry();
    });
  });
}
