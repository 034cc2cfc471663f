// A spoken call with the agent through the service's realtime relay: the microphone captured with the Web
// Audio API as 24 kHz 16-bit PCM, the model's audio played back, the transcripts shown as they come (when
// the agent shows transcriptions), and the call's end said. The service keeps the transcripts in the
// session, so a reload shows them too.
import { useEffect, useRef, useState } from 'preact/hooks';
import { answer } from '../api';
import type { Session } from '../schemas';
import type { Context } from '../shell';

const RATE = 24_000;

/** Float samples as base64 PCM16 little-endian. */
function pcm16(samples: Float32Array): string {
  const bytes = new Uint8Array(samples.length * 2);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < samples.length; i++)
    view.setInt16(i * 2, Math.max(-1, Math.min(1, samples[i] ?? 0)) * 0x7fff, true);
  let text = '';
  for (const b of bytes) text += String.fromCharCode(b);
  return btoa(text);
}

/** Base64 PCM16 as float samples. */
function samplesOf(base64: string): Float32Array<ArrayBuffer> {
  const raw = atob(base64);
  const out = new Float32Array(raw.length >> 1);
  for (let i = 0; i < out.length; i++) {
    const v = raw.charCodeAt(2 * i) | (raw.charCodeAt(2 * i + 1) << 8);
    out[i] = (v >= 0x8000 ? v - 0x10000 : v) / 0x8000;
  }
  return out;
}

export function Call({
  ctx,
  agent,
  ensureSession,
  onEnded,
}: {
  ctx: Context;
  agent: string;
  ensureSession: () => Promise<Session>;
  onEnded: (sessionId: string) => void;
}) {
  const [live, setLive] = useState<{ sender: 'You' | 'Agent'; text: string }[]>([]);
  const [state, setState] = useState<'idle' | 'connecting' | 'open'>('idle');
  const [status, setStatus] = useState<string>();
  const call = useRef<{ ws: WebSocket; audio: AudioContext; stream: MediaStream; playAt: number; show: boolean }>();
  const hangUp = () => {
    const c = call.current;
    call.current = undefined;
    if (!c) return;
    c.stream.getTracks().forEach((t) => t.stop());
    void c.audio.close();
    if (c.ws.readyState === WebSocket.OPEN) c.ws.close(1000);
  };
  useEffect(() => hangUp, []);
  const start = async () => {
    setStatus(undefined);
    setLive([]);
    setState('connecting');
    try {
      const session = await ensureSession();
      const opened = await answer(
        ctx.api.core.POST('/realtime-sessions', { body: { agent_name: agent, session_id: session.id } }),
      );
      const stream = await navigator.mediaDevices.getUserMedia({ audio: { channelCount: 1, echoCancellation: true } });
      const audio = new AudioContext({ sampleRate: RATE });
      // A browser cannot set headers on a WebSocket: the token goes as a subprotocol beside "realtime".
      const ws = new WebSocket(opened.websocket_url, ['realtime', `bearer.${await ctx.session.token()}`]);
      call.current = { ws, audio, stream, playAt: 0, show: opened.show_transcriptions };
      ws.onopen = () => {
        setState('open');
        const source = audio.createMediaStreamSource(stream);
        // A ScriptProcessor, deprecated in favour of AudioWorklet, needs no module script of its own: one
        // node, in every browser the portal supports. An AudioWorklet module is the change to make when it goes.
        /* eslint-disable @typescript-eslint/no-deprecated */
        const capture = audio.createScriptProcessor(4096, 1, 1);
        capture.onaudioprocess = (e) => {
          if (ws.readyState === WebSocket.OPEN)
            ws.send(
              JSON.stringify({ type: 'input_audio_buffer.append', audio: pcm16(e.inputBuffer.getChannelData(0)) }),
            );
        };
        /* eslint-enable @typescript-eslint/no-deprecated */
        source.connect(capture);
        capture.connect(audio.destination);
      };
      ws.onmessage = (m: MessageEvent<string>) => {
        const event = JSON.parse(m.data) as { type: string; transcript?: string; delta?: string; message?: string };
        const c = call.current;
        if (event.type === 'response.audio.delta' && event.delta && c) {
          const samples = samplesOf(event.delta);
          const buffer = c.audio.createBuffer(1, samples.length, RATE);
          buffer.copyToChannel(samples, 0);
          const player = c.audio.createBufferSource();
          player.buffer = buffer;
          player.connect(c.audio.destination);
          c.playAt = Math.max(c.playAt, c.audio.currentTime);
          player.start(c.playAt);
          c.playAt += buffer.duration;
        }
        if (c?.show && event.type === 'conversation.item.input_audio_transcription.completed')
          setLive((l) => [...l, { sender: 'You', text: event.transcript ?? '' }]);
        if (
          c?.show &&
          (event.type === 'response.audio_transcript.done' || event.type === 'response.output_audio_transcript.done')
        )
          setLive((l) => [...l, { sender: 'Agent', text: event.transcript ?? '' }]);
        if (event.type === 'relay.call_ended') setStatus(`Call ended: ${event.message ?? ''}`);
      };
      ws.onclose = () => {
        hangUp();
        setState('idle');
        setStatus((s) => s ?? 'Call ended');
        onEnded(opened.session_id);
      };
    } catch (e) {
      hangUp();
      setState('idle');
      setStatus(`The call could not start: ${e instanceof Error ? e.message : String(e)}`);
    }
  };
  const doneSpeaking = () => call.current?.ws.send(JSON.stringify({ type: 'input_audio_buffer.commit' }));
  return (
    <div class="call" role="group" aria-label="Spoken call">
      {state === 'idle' ? (
        <button type="button" onClick={() => void start()}>
          Start a call
        </button>
      ) : (
        <>
          <button type="button" onClick={doneSpeaking} disabled={state !== 'open'}>
            Done speaking
          </button>
          <button type="button" class="link" onClick={hangUp}>
            End the call
          </button>
        </>
      )}
      {live.length > 0 && (
        <ol class="live" aria-label="Live transcript" aria-live="polite">
          {live.map((t, i) => (
            <li key={i}>
              <strong>{t.sender}:</strong> {t.text}
            </li>
          ))}
        </ol>
      )}
      {status && <p role="status">{status}</p>}
    </div>
  );
}
