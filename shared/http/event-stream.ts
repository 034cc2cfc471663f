// Server-sent events: an event's text, and a channel that producers push events into while the host sends
// them out as they come (no buffering), ending with the producer or when the client goes away.

/** One server-sent event: `event: <name>` and one `data:` line of JSON. */
export const sseEvent = (name: string, data: unknown) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;

/** The headers of an event stream: never cached, never buffered by a proxy. */
export const SSE_HEADERS: Readonly<Record<string, string>> = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-accel-buffering': 'no' };

/** Whether a request asks for an event stream (`Accept: text/event-stream`). */
export const wantsEventStream = (accept: string | undefined) => accept !== undefined && /(^|,)\s*text\/event-stream\s*(;|,|$)/i.test(accept);

/** An async queue of strings: push while the consumer iterates; `end` finishes it. */
export class EventChannel implements AsyncIterable<string> {
  private readonly items: string[] = [];
  private waiting: (() => void) | undefined;
  private ended = false;

  push(item: string): void {
    this.items.push(item);
    this.wake();
  }

  end(): void {
    this.ended = true;
    this.wake();
  }

  private wake() {
    const w = this.waiting;
    this.waiting = undefined;
    w?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<string> {
    for (;;) {
      const item = this.items.shift();
      if (item !== undefined) {
        yield item;
        continue;
      }
      if (this.ended) return;
      await new Promise<void>((resolve) => (this.waiting = resolve));
    }
  }
}
