// A model's streamed answer is read by its stream's events: every way such a stream can end (its [DONE], its
// end before it, cut without an error, an error, too large, not JSON, not UTF-8) settles the read once, and
// each piece reaches the caller in the caller's async context.
import { PassThrough } from 'node:stream';
import { context, createContextKey, ROOT_CONTEXT } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { describe, expect, it } from 'vitest';
import { readSse } from '../../../../shared/models/sse.js';

const chunk = (text: string) => `data: ${JSON.stringify({ choices: [{ delta: { content: text } }] })}\n\n`;
const usage = `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 7, completion_tokens: 2 } })}\n\n`;

describe('readSse', () => {
  it(
    'gives each piece as it comes and the whole answer at [DONE], then reads the rest to its end within the ' + 'bound',
    async () => {
      const body = new PassThrough();
      const pieces: string[] = [];
      const reading = readSse(body, 1 << 20, (t) => pieces.push(t));
      // A multi-byte character split between two network chunks.
      const bytes = Buffer.from(chunk('hé') + chunk('llo') + usage + 'data: [DONE]\n\n');
      const cut = bytes.indexOf(0xc3) + 1;
      body.write(bytes.subarray(0, cut));
      body.write(bytes.subarray(cut));
      expect(await reading).toEqual({ content: 'héllo', promptTokens: 7, completionTokens: 2 });
      expect(pieces).toEqual(['hé', 'llo']);
      // The body is read to its end (its connection can be used again), and nothing after [DONE] is a piece.
      const ended = new Promise((r) => body.once('end', r));
      body.end(chunk('after'));
      await ended;
      expect(body.readableEnded).toBe(true);
      expect(pieces).toEqual(['hé', 'llo']);
      // A body that goes on past the bound after [DONE] is closed.
      const endless = new PassThrough();
      const done = readSse(endless, 100, () => undefined);
      endless.write('data: [DONE]\n\n');
      await done;
      endless.write('x'.repeat(200));
      await new Promise((r) => setImmediate(r));
      expect(endless.destroyed).toBe(true);
    },
  );

  it('fails a stream that ends, or is cut, before [DONE]', async () => {
    const ended = new PassThrough();
    const a = readSse(ended, 1 << 20, () => undefined);
    ended.end(chunk('half'));
    await expect(a).rejects.toThrow(/ended before \[DONE\]/);
    const cut = new PassThrough();
    const b = readSse(cut, 1 << 20, () => undefined);
    cut.write(chunk('half'));
    cut.destroy();
    await expect(b).rejects.toThrow(/ended before \[DONE\]/);
  });

  it("fails with the stream's own error, and on a stream too large, not JSON or not UTF-8", async () => {
    const broken = new PassThrough();
    const a = readSse(broken, 1 << 20, () => undefined);
    broken.destroy(new Error('socket hang up'));
    await expect(a).rejects.toThrow('socket hang up');
    for (const [bytes, reason] of [
      [Buffer.from(chunk('x'.repeat(200))), /larger than 100 bytes/],
      [Buffer.from('data: {not json\n\n'), /not JSON/],
      [Buffer.from([0x64, 0x61, 0x74, 0x61, 0x3a, 0x20, 0xff, 0xfe, 0x0a, 0x0a]), /not UTF-8/],
    ] as const) {
      const body = new PassThrough();
      const reading = readSse(body, 100, () => undefined);
      body.write(bytes);
      await expect(reading).rejects.toThrow(reason);
      expect(body.destroyed).toBe(true);
    }
  });

  it("gives the pieces in the caller's async context, not the connection's", async () => {
    // The service's context: OpenTelemetry's, kept in an AsyncLocalStorage (telemetry/setup.ts).
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    try {
      const key = createContextKey('who');
      const as = (who: string) => ROOT_CONTEXT.setValue(key, who);
      // The stream is made (and written) in another context, as a pooled connection opened by another request.
      const body = context.with(as('connection'), () => new PassThrough());
      const seen: unknown[] = [];
      const reading = context.with(as('this call'), () =>
        readSse(body, 1 << 20, () => seen.push(context.active().getValue(key))),
      );
      context.with(as('connection'), () => body.write(chunk('a')));
      // A connection this call opened emits in its own context already.
      context.with(as('this call'), () => body.write(chunk('b') + 'data: [DONE]\n\n'));
      await reading;
      expect(seen).toEqual(['this call', 'this call']);
    } finally {
      context.disable();
    }
  });
});
