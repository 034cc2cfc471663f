// The mock model's Realtime socket (`/v1/realtime`, `/openai/realtime`): it transcribes nothing real but
// answers the protocol. Each committed audio buffer is "heard" as a fixed transcript, answered with a short
// synthetic audio clip and the transcript "Echo: <what was heard>", and a response.done with usage. A text
// item (conversation.item.create) is answered the same way on response.create.
import { randomUUID } from 'node:crypto';
import type http from 'node:http';
import type { Duplex } from 'node:stream';
import WebSocket, { WebSocketServer } from 'ws';
import { textOf } from '../shared/realtime/model-socket.js';

export interface RealtimeCall {
  url: string;
  headers: http.IncomingHttpHeaders;
  /** Every event the call received, in order. */
  received: { type: string; [k: string]: unknown }[];
  /** Whether the caller has closed the call's socket. */
  closed: boolean;
}

export interface MockRealtime {
  calls: RealtimeCall[];
  /** What every committed audio buffer is heard as (default "Hello from the microphone"). */
  setTranscript(text: string): void;
  /**
   * Milliseconds between the answer's audio chunks (default 0: the answer at once). A paced answer can be
   * cancelled (response.cancel): its response.done then says cancelled, with the usage of what it sent.
   */
  setPace(ms: number): void;
  /** Ends every open call abruptly (the model's socket failing mid-call). */
  dropAll(): void;
  close(): void;
}

/** 24 kHz, 16-bit mono PCM of a short tone, as base64 chunks of 20 ms: the answer's audio. */
function tone(ms: number): string[] {
  const rate = 24_000;
  const frame = (rate / 1000) * 20;
  const chunks: string[] = [];
  for (let start = 0; start < (rate * ms) / 1000; start += frame) {
    const pcm = Buffer.alloc(frame * 2);
    for (let i = 0; i < frame; i++)
      pcm.writeInt16LE(Math.round(Math.sin((2 * Math.PI * 440 * (start + i)) / rate) * 8000), i * 2);
    chunks.push(pcm.toString('base64'));
  }
  return chunks;
}
const ANSWER_AUDIO = tone(200);

/** Serves the Realtime socket on the mock model's server. */
export function attachMockRealtime(server: http.Server): MockRealtime {
  const wss = new WebSocketServer({ noServer: true });
  const calls: RealtimeCall[] = [];
  const open = new Set<WebSocket>();
  let heard = 'Hello from the microphone';
  let pace = 0;
  server.on('upgrade', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    const path = (req.url ?? '').split('?')[0] ?? '';
    if (!/\/(v1|openai)\/realtime$/.test(path)) {
      socket.destroy();
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      const call: RealtimeCall = { url: req.url ?? '', headers: req.headers, received: [], closed: false };
      calls.push(call);
      open.add(ws);
      ws.on('close', () => {
        open.delete(ws);
        call.closed = true;
      });
      const send = (event: Record<string, unknown>) =>
        ws.readyState === WebSocket.OPEN && ws.send(JSON.stringify({ event_id: `evt_${randomUUID()}`, ...event }));
      let session: Record<string, unknown> = {
        id: `sess_${randomUUID()}`,
        model: new URL(req.url ?? '/', 'http://x').searchParams.get('model') ?? 'realtime',
        voice: 'alloy',
        instructions: '',
      };
      let audioBytes = 0;
      let lastText = 'Hello';
      let cancel: (() => void) | undefined;
      const respond = async (transcript: string) => {
        const id = `resp_${randomUUID()}`;
        const itemId = `item_${randomUUID()}`;
        const input = Math.max(1, Math.round(audioBytes / 1600)) + transcript.split(/\s+/).length;
        audioBytes = 0;
        const done = (status: string, output: number) =>
          send({
            type: 'response.done',
            response: {
              id,
              status,
              usage: { input_tokens: input, output_tokens: output, total_tokens: input + output },
            },
          });
        send({ type: 'response.created', response: { id, status: 'in_progress' } });
        const asked = { cancel: false };
        cancel = () => (asked.cancel = true);
        let sent = 0;
        for (const delta of ANSWER_AUDIO) {
          if (pace > 0) await new Promise((resolve) => setTimeout(resolve, pace));
          if (asked.cancel) return done('cancelled', sent);
          send({ type: 'response.audio.delta', response_id: id, item_id: itemId, delta });
          sent++;
        }
        cancel = undefined;
        const answer = `Echo: ${transcript}`;
        send({ type: 'response.audio_transcript.delta', response_id: id, item_id: itemId, delta: answer });
        send({ type: 'response.audio_transcript.done', response_id: id, item_id: itemId, transcript: answer });
        done('completed', answer.split(/\s+/).length + ANSWER_AUDIO.length);
      };
      send({ type: 'session.created', session });
      ws.on('message', (data: WebSocket.RawData) => {
        let event: {
          type?: string;
          session?: Record<string, unknown>;
          audio?: string;
          item?: { content?: { text?: string }[] };
        };
        try {
          event = JSON.parse(textOf(data)) as typeof event;
        } catch {
          return send({ type: 'error', error: { type: 'invalid_request_error', message: 'not JSON' } });
        }
        call.received.push({ ...event, type: event.type ?? '' });
        switch (event.type) {
          case 'session.update':
            session = { ...session, ...event.session };
            return send({ type: 'session.updated', session });
          case 'input_audio_buffer.append':
            audioBytes += Buffer.from(event.audio ?? '', 'base64').length;
            return;
          case 'input_audio_buffer.commit': {
            const itemId = `item_${randomUUID()}`;
            send({ type: 'input_audio_buffer.committed', item_id: itemId });
            send({
              type: 'conversation.item.input_audio_transcription.completed',
              item_id: itemId,
              content_index: 0,
              transcript: heard,
            });
            return void respond(heard);
          }
          case 'conversation.item.create':
            lastText = event.item?.content?.map((c) => c.text ?? '').join(' ') || lastText;
            return send({ type: 'conversation.item.created', item: event.item });
          case 'response.create':
            return void respond(lastText);
          case 'response.cancel':
            return cancel?.();
          default:
            return;
        }
      });
    });
  });
  return {
    calls,
    setTranscript: (text) => (heard = text),
    setPace: (ms) => (pace = ms),
    dropAll: () => {
      for (const ws of open) ws.terminate();
    },
    close: () => {
      for (const ws of open) ws.terminate();
      wss.close();
    },
  };
}
