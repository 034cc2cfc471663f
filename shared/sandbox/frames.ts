// The messages between the service and a sandbox process, over the process's standard input and output: each
// a frame of a JSON header and raw bytes (files, the interpreter snapshot), so bytes are never turned into
// text. The process side reads synchronously (a Python call to `svc` blocks until its answer comes); the
// service side reads what the process writes as untrusted input: a frame longer than the service accepts
// fails the call before its bytes are kept.
import { isRecord } from './sandbox.js';

/** Length of the two 32-bit sizes that open a frame: the header's, then the body's. */
const PREFIX = 8;

export interface Frame {
  header: Record<string, unknown>;
  body: Uint8Array;
}

/** A frame as bytes: sizes and the header as JSON, then the body as it is (a large body is not copied). */
export function encodeFrame(header: object, body: Uint8Array = new Uint8Array(0)): [Buffer, Uint8Array] {
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  const head = Buffer.alloc(PREFIX + json.length);
  head.writeUInt32LE(json.length, 0);
  head.writeUInt32LE(body.length, 4);
  json.copy(head, PREFIX);
  return [head, body];
}

/** Thrown by a reader when the other side sends more than it may, or something that is not a frame. */
export class FrameError extends Error {}

/**
 * Frames from a stream of chunks, for the service's side. A frame whose header is longer than `maxHeader`
 * or whose body is longer than `maxBody` is refused as soon as its sizes are read.
 */
export class FrameReader {
  private chunks: Buffer[] = [];
  private buffered = 0;

  constructor(private readonly limits: { maxHeader: number; maxBody: number }) {}

  /** Takes a chunk and answers the frames it completes. */
  push(chunk: Buffer): Frame[] {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    const frames: Frame[] = [];
    for (;;) {
      if (this.buffered < PREFIX) return frames;
      const head = this.peek(PREFIX);
      const headerLength = head.readUInt32LE(0);
      const bodyLength = head.readUInt32LE(4);
      if (headerLength > this.limits.maxHeader || bodyLength > this.limits.maxBody)
        throw new FrameError(`a message of ${headerLength + bodyLength} bytes is larger than allowed`);
      const total = PREFIX + headerLength + bodyLength;
      if (this.buffered < total) return frames;
      const whole = this.take(total);
      let header: unknown;
      try {
        header = JSON.parse(whole.subarray(PREFIX, PREFIX + headerLength).toString('utf8'));
      } catch {
        throw new FrameError('a message header is not JSON');
      }
      if (!isRecord(header)) throw new FrameError('a message header is not an object');
      frames.push({ header, body: whole.subarray(PREFIX + headerLength) });
    }
  }

  private peek(n: number): Buffer {
    const first = this.chunks[0];
    if (first && first.length >= n) return first.subarray(0, n);
    const all = Buffer.concat(this.chunks);
    this.chunks = [all];
    return all.subarray(0, n);
  }

  private take(n: number): Buffer {
    const [first, ...more] = this.chunks;
    const all = first && more.length === 0 ? first : Buffer.concat(this.chunks);
    const rest = all.subarray(n);
    this.chunks = rest.length > 0 ? [rest] : [];
    this.buffered = rest.length;
    return all.subarray(0, n);
  }
}

/** Blocking reads and writes of frames on file descriptors, for the process's side. */
export interface SyncIo {
  readSync(fd: number, buffer: Uint8Array, offset: number, length: number, position: null): number;
  writeSync(fd: number, buffer: Uint8Array): number;
}

/** Reads exactly one frame from `fd`, waiting as long as it takes; null when the other side closed. */
export function readFrameSync(io: SyncIo, fd: number): Frame | null {
  const prefix = readExactly(io, fd, PREFIX);
  if (!prefix) return null;
  const header = readExactly(io, fd, prefix.readUInt32LE(0));
  // The body in a buffer of its own, starting at its first byte (typed views of it need aligned offsets).
  const body = header && readExactly(io, fd, prefix.readUInt32LE(4));
  if (!header || !body) return null;
  const parsed: unknown = JSON.parse(header.toString('utf8'));
  if (!isRecord(parsed)) throw new FrameError('a message header is not an object');
  return { header: parsed, body };
}

/** Writes one frame to `fd`, waiting until all of it is written. */
export function writeFrameSync(io: SyncIo, fd: number, frame: { header: object; body?: Uint8Array }): void {
  for (const bytes of encodeFrame(frame.header, frame.body))
    for (let at = 0; at < bytes.length;) at += io.writeSync(fd, bytes.subarray(at));
}

const pause = new Int32Array(new SharedArrayBuffer(4));

function readExactly(io: SyncIo, fd: number, n: number): Buffer | null {
  const buffer = Buffer.from(new ArrayBuffer(n));
  for (let at = 0; at < n;) {
    let read: number;
    try {
      read = io.readSync(fd, buffer, at, n - at, null);
    } catch (e) {
      // A descriptor left non-blocking answers EAGAIN when nothing has come yet: wait a little and read again.
      if (!(typeof e === 'object' && e !== null && 'code' in e && e.code === 'EAGAIN')) throw e;
      Atomics.wait(pause, 0, 0, 2);
      continue;
    }
    if (read === 0) return null;
    at += read;
  }
  return buffer;
}
