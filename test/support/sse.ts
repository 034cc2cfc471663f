// Reads a server-sent event stream the way a client does (eventsource-parser), with the time of each event.
import { createParser } from 'eventsource-parser';

export interface ReceivedEvent {
  event: string;
  data: unknown;
  at: number;
}

/** Collects the events of a streamed body; `onEvent` may stop reading by returning false. */
export async function readEvents(
  body: AsyncIterable<Uint8Array> | ReadableStream<Uint8Array>,
  onEvent: (e: ReceivedEvent) => boolean = () => true,
): Promise<ReceivedEvent[]> {
  const events: ReceivedEvent[] = [];
  const reading = { stop: false };
  const parser = createParser({
    onEvent(e) {
      const received = { event: e.event ?? 'message', data: JSON.parse(e.data) as unknown, at: performance.now() };
      events.push(received);
      if (!onEvent(received)) reading.stop = true;
    },
  });
  const decoder = new TextDecoder();
  for await (const chunk of body as AsyncIterable<Uint8Array>) {
    parser.feed(decoder.decode(chunk, { stream: true }));
    if (reading.stop) break;
  }
  return events;
}
