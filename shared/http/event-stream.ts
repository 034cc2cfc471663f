// Server-sent events: an event's text, and a channel that producers push events into while the host sends
// them out as they come (no buffering), ending with the producer or when the client goes away.

/** One server-sent event: `id: <n>` when numbered, `event: <name>` and one `data:` line of JSON. */
export const sseEvent = (name: string, data: unknown, id?: number) => `${id !== undefined ? `id: ${id}\n` : ''}event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;

/** The headers of an event stream: never cached, never buffered by a proxy. */
export const SSE_HEADERS: Readonly<Record<string, string>> = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-accel-buffering': 'no' };

/** Whether a request asks for an event stream (`Accept: text/event-stream`). */
export const wantsEventStream = (accept: string | undefined) => accept !== undefined && /(^|,)\s*text\/event-stream\s*(;|,|$)/i.test(accept);

/** Bytes of events a stream may hold for a client that does not read them; past it the stream is cut. */
export const MAX_UNSENT_BYTES = 8 * 1024 * 1024;

/** A client read too slowly: the events it had not taken passed MAX_UNSENT_BYTES. */
export class SlowReaderError extends Error {
  override name = 'SlowReaderError';
}

/**
 * An async queue of strings: push while the consumer iterates; `end` finishes it. Bounded: when what the
 * consumer has not taken passes `maxBytes` (a client that stopped reading), the queue is dropped and the
 * consumer's next read throws SlowReaderError, so the host closes the connection and the producer stops.
 */
export class EventChannel implements AsyncIterable<string> {
  private readonly items: string[] = [];
  /** The consumer's pending read, handed the next event directly when it is pushed. */
  private waiting: ((result: IteratorResult<string>) => void) | undefined;
  private ended = false;
  private overflowed = false;
  private bytes = 0;

  /** `onAbandoned` runs when the consumer stops before the end: it returned, or it fell too far behind. */
  constructor(
    private readonly maxBytes = MAX_UNSENT_BYTES,
    private readonly onAbandoned: () => void = () => undefined,
  ) {}

  push(item: string): void {
    if (this.overflowed || this.ended) return;
    const waiting = this.waiting;
    if (waiting) {
      // Nothing queued and the consumer waits: one promise from the model's piece to the host's write.
      this.waiting = undefined;
      waiting({ value: item, done: false });
      return;
    }
    this.bytes += item.length;
    // One item alone may be larger (a long answer's `completed` event): only a backlog is refused.
    if (this.bytes > this.maxBytes && this.items.length > 0) {
      this.overflowed = true;
      this.items.length = 0;
      this.bytes = 0;
    } else {
      this.items.push(item);
    }
  }

  end(): void {
    this.ended = true;
    const waiting = this.waiting;
    this.waiting = undefined;
    waiting?.({ value: undefined, done: true });
  }

  /**
   * The consumer's side, written out rather than as an async generator: every open stream takes each of its
   * events through here, and a generator costs several more promises per event.
   */
  [Symbol.asyncIterator](): AsyncIterator<string> {
    return {
      next: () => this.next(),
      return: (): Promise<IteratorResult<string>> => {
        // The consumer stopped: nothing more is queued for it.
        if (!this.ended) this.onAbandoned();
        this.ended = true;
        this.items.length = 0;
        this.bytes = 0;
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }

  private next(): Promise<IteratorResult<string>> {
    if (this.overflowed) {
      this.onAbandoned();
      return Promise.reject(new SlowReaderError('the client did not read the stream fast enough'));
    }
    const item = this.items.shift();
    if (item !== undefined) {
      this.bytes -= item.length;
      return Promise.resolve({ value: item, done: false });
    }
    if (this.ended) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => (this.waiting = resolve));
  }
}
