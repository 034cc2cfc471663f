// A conversation: the messages of a session, and a prompt answered as the model writes it. The answer runs
// in the background on the service, so a dropped connection resumes where it was, and Stop cancels it.
import { useEffect, useRef, useState } from 'preact/hooks';
import { Call } from './call';
import { answer } from '../api';
import { ApiError } from '../api-error';
import { streamCompletion } from '../completion-stream';
import { Stop } from '../icons';
import { formData } from '../multipart';
import { all } from '../paging';
import type { Message, Session, UploadResult } from '../schemas';
import { type Context, ErrorText, FilePicker } from '../shell';
import type { AgentView } from './agent-view';
import { Markdown } from './markdown';
import { AssistantMessage } from './messages';

interface Attached extends Pick<UploadResult, 'object_id' | 'display_name'> {
  /** A local preview of an image (an object URL of the file picked). */
  preview?: string;
}

const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/webp', 'image/gif'];

function Previews({ files }: { files: readonly Attached[] }) {
  return (
    <ul class="attachments" aria-label="Attached files">
      {files.map((a) => (
        <li key={a.object_id}>
          {a.preview && <img class="preview" src={a.preview} alt={`Preview of ${a.display_name}`} />}
          {a.display_name}
        </li>
      ))}
    </ul>
  );
}

export function Conversation({
  ctx,
  agent,
  agentLabel,
  view,
  session,
  onSession,
}: {
  ctx: Context;
  agent: string;
  agentLabel: string;
  view: AgentView;
  session: Session | undefined;
  onSession: (s: Session) => void;
}) {
  const [messages, setMessages] = useState<Message[]>([]);
  const [streaming, setStreaming] = useState<{
    prompt: string;
    text: string;
    files: Attached[];
    operationId?: string;
  }>();
  const [notice, setNotice] = useState<string>();
  const [prompt, setPrompt] = useState('');
  const [attachments, setAttachments] = useState<Attached[]>([]);
  const [error, setError] = useState<unknown>();
  const end = useRef<HTMLLIElement>(null);

  const reload = async (id: string) =>
    setMessages(
      await all((query) =>
        ctx.api.core.GET('/sessions/{sessionId}/messages', { params: { path: { sessionId: id }, query } }),
      ),
    );
  useEffect(() => {
    setMessages([]);
    if (session) reload(session.id).catch(setError);
  }, [session?.id]);
  useEffect(() => end.current?.scrollIntoView({ block: 'end' }), [messages.length, streaming?.text]);

  const ensureSession = async (name = prompt.slice(0, 60) || 'New Chat') =>
    session ?? (await answer(ctx.api.core.POST('/sessions', { body: { name } })));

  const send = async () => {
    const text = prompt.trim();
    if (!text || streaming) return;
    setError(undefined);
    setNotice(undefined);
    const s = await ensureSession();
    if (s.id !== session?.id) onSession(s);
    setPrompt('');
    const files = attachments;
    setStreaming({ prompt: text, text: '', files });
    try {
      await streamCompletion(ctx.api.core, {
        request: {
          user_prompt: text,
          agent_name: agent,
          session_id: s.id,
          ...(files.length ? { attachments: files.map((a) => a.object_id) } : {}),
        },
        on: {
          start: (operationId) => setStreaming((st) => st && { ...st, operationId }),
          delta: (piece) => setStreaming((st) => st && { ...st, text: st.text + piece }),
        },
      });
      setAttachments([]);
      await reload(s.id);
    } catch (e) {
      if (e instanceof ApiError && e.code === 'Cancelled') {
        setNotice('Stopped: the answer was cancelled and is not kept.');
        setPrompt(text);
      } else {
        setPrompt(text);
        setError(e);
      }
    } finally {
      setStreaming(undefined);
    }
  };

  const stop = () => {
    const operationId = streaming?.operationId;
    if (operationId) {
      ctx.api.core.POST('/completions/{operationId}/cancel', { params: { path: { operationId } } }).catch(setError);
    }
  };

  const upload = async (file: File) => {
    const s = await ensureSession();
    if (s.id !== session?.id) onSession(s);
    const uploaded = await answer(
      ctx.api.core.POST('/files/upload', {
        body: { file, agent_name: agent, session_id: s.id },
        bodySerializer: formData,
      }),
    );
    setAttachments((a) => [
      ...a,
      { ...uploaded, ...(IMAGE_TYPES.includes(file.type) ? { preview: URL.createObjectURL(file) } : {}) },
    ]);
  };

  return (
    <section class="conversation" aria-label="Conversation">
      <ol class="messages" aria-live="polite">
        {messages.length === 0 && !streaming && view.welcome_message && (
          <li class="message welcome">{view.welcome_message}</li>
        )}
        {messages.map((m) =>
          m.sender === 'Assistant' && session ? (
            <AssistantMessage
              key={m.id}
              ctx={ctx}
              view={view}
              session={session}
              m={m}
              sender={agentLabel}
              onRated={(r) => setMessages((all) => all.map((x) => (x.id === r.id ? r : x)))}
            />
          ) : (
            <li key={m.id} class="message user">
              <span class="sender">{m.sender_display_name || 'You'}</span>
              <div class="text">{m.text}</div>
              {view.show_message_tokens && <div class="meta tokens">{m.tokens} prompt tokens</div>}
            </li>
          ),
        )}
        {streaming && (
          <>
            <li class="message user">
              <div class="text">{streaming.prompt}</div>
              {streaming.files.length > 0 && <Previews files={streaming.files} />}
            </li>
            <li class="message assistant streaming" aria-busy="true">
              <span class="sender">{agentLabel}</span>
              {streaming.text ? <Markdown text={streaming.text} /> : <div class="text">…</div>}
            </li>
          </>
        )}
        <li ref={end} class="end" aria-hidden="true" />
      </ol>
      {notice && (
        <p class="notice" role="status">
          {notice}
        </p>
      )}
      <ErrorText error={error} />
      <form
        class="composer"
        onSubmit={(e) => {
          e.preventDefault();
          void send();
        }}
      >
        {attachments.length > 0 && !streaming && <Previews files={attachments} />}
        <label for="prompt" class="visually-hidden">
          Message
        </label>
        <textarea
          id="prompt"
          rows={2}
          value={prompt}
          placeholder="Ask something (Enter sends, Shift+Enter for a new line)"
          onInput={(e) => setPrompt(e.currentTarget.value)}
          onKeyDown={(e) => {
            if (e.key === 'Enter' && !e.shiftKey) {
              e.preventDefault();
              void send();
            }
          }}
        />
        {view.show_file_upload && (
          <FilePicker id="upload" label="Attach a file" onFile={(file) => void upload(file).catch(setError)} />
        )}
        {view.speech && !streaming && (
          <Call
            ctx={ctx}
            agent={agent}
            ensureSession={async () => {
              const s = await ensureSession(`Call with ${agentLabel}`);
              if (s.id !== session?.id) onSession(s);
              return s;
            }}
            onEnded={(id) => void reload(id).catch(setError)}
          />
        )}
        {streaming ? (
          <button type="button" class="stop" onClick={stop} disabled={!streaming.operationId}>
            <Stop /> Stop
          </button>
        ) : (
          <button type="submit">Send</button>
        )}
      </form>
    </section>
  );
}
