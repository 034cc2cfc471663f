// Server-sent events: an event's text, and a channel that producers push events into while the host sends
// them out as they come (no buffering), ending with the producer or when the client goes away.

/** One server-sent event: `id: <n>` when numbered, `event: <name>` and one `data:` line of JSON. */
export const sseEvent = (name: string, data: unknown, id?: number) =>
  `${id !== undefined ? `id: ${id}\n` : ''}event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;

/** The headers of an event stream: never cached, never buffered by a proxy. */
export const SSE_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-store',
  'x-accel-buffering': 'no',
};

/** Whether a request asks for an event stream (`Accept: text/event-stream`). */
export const wantsEventStream = (accept: string | undefined) =>
  accept !== undefined && /(^|,)\s*text\/event-stream\s*(;|,|$)/i.test(accept);

/**
 * Bytes of events a stream may hold for a client that does not read them; past it the stream is cut. An
 * answer's pieces are small and a reading client takes them as they come: what a stream holds beyond this
 * is a client that stopped, costing the service memory for nothing.
 */
export const MAX_UNSENT_BYTES = 512 * 1024;

/** A client read too slowly: the events it had not taken passed MAX_UNSENT_BYTES. */
export class SlowReaderError extends Error {
  override name = 'SlowReaderError';
}

const tooSlow = () => new SlowReaderError('the client did not read the stream fast enough');

/**
 * Where a host that writes each event as it is pushed takes them (EventChannel.drainTo): no promise per
 * event, which a host holding thousands of open streams pays hundreds of times a second.
 */
export interface EventSink {
  /** Writes one event; false when the client is not taking them yet: the channel holds the next ones until `resume`. */
  write(item: string): boolean;
  /** The channel ended; with an error when it dropped its backlog for a client that read too slowly. */
  end(error?: Error): void;
}

/**
 * An async queue of strings: push while the consumer iterates (or drains it into a sink); `end` finishes
 * it. Bounded: when what the consumer has not taken passes `maxBytes` (a client that stopped reading), the
 * queue is dropped and the consumer's next read throws SlowReaderError (a sink's end gets it), so the host
 * closes the connection and the producer stops.
 */
export class EventChannel implements AsyncIterable<string> {
  private readonly items: string[] = [];
  /** The consumer's pending read, handed the next event directly when it is pushed. */
  private waiting: ((result: IteratorResult<string>) => void) | undefined;
  /** The consumer's sink, when it drains the channel instead of iterating; `paused` while its client is behind. */
  private sink: EventSink | undefined;
  private paused = false;
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
    if (this.sink && !this.paused && this.items.length === 0) {
      if (!this.sink.write(item)) this.paused = true;
      return;
    }
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
      if (this.sink) {
        this.onAbandoned();
        this.sink.end(tooSlow());
        this.sink = undefined;
      }
    } else {
      this.items.push(item);
    }
  }

  end(): void {
    this.ended = true;
    const waiting = this.waiting;
    this.waiting = undefined;
    waiting?.({ value: undefined, done: true });
    if (this.sink && this.items.length === 0) this.closeSink();
  }

  /**
   * The consumer's side as a sink: each event is written as it is pushed (what was queued first, at once).
   * Instead of iterating; `resume` once a write that returned false has been taken, `stop` when the client
   * went away.
   */
  drainTo(sink: EventSink): { resume(): void; stop(): void } {
    this.sink = sink;
    const resume = () => {
      this.paused = false;
      while (this.sink && !this.paused && this.items.length > 0) {
        if (!this.sink.write(this.take() as string)) this.paused = true;
      }
      if (this.sink && this.ended && this.items.length === 0) this.closeSink();
    };
    resume();
    return { resume, stop: () => this.abandon() };
  }

  /**
   * The consumer's side, written out rather than as an async generator: every open stream takes each of its
   * events through here, and a generator costs several more promises per event.
   */
  [Symbol.asyncIterator](): AsyncIterator<string> {
    return {
      next: () => this.next(),
      return: (): Promise<IteratorResult<string>> => {
        this.abandon();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }

  /** The consumer stopped: nothing more is queued for it. */
  private abandon(): void {
    if (!this.ended) this.onAbandoned();
    this.ended = true;
    this.items.length = 0;
    this.bytes = 0;
    this.sink = undefined;
  }

  private closeSink(): void {
    const sink = this.sink;
    this.sink = undefined;
    sink?.end();
  }

  /** The oldest queued event, no longer counted against the bound. */
  private take(): string | undefined {
    const item = this.items.shift();
    if (item !== undefined) this.bytes -= item.length;
    return item;
  }

  private next(): Promise<IteratorResult<string>> {
    if (this.overflowed) {
      this.onAbandoned();
      return Promise.reject(tooSlow());
    }
    const item = this.take();
    if (item !== undefined) return Promise.resolve({ value: item, done: false });
    if (this.ended) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => (this.waiting = resolve));
  }
}
