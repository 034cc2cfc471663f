// A conversation: the messages of a session, and a prompt answered as the model writes it.
import { useEffect, useRef, useState } from 'preact/hooks';
import type { CompletionResponse, Message, Session } from '../api';
import { type Context, ErrorText, FilePicker } from '../shell';
import type { AgentView } from './agent-view';
import { AssistantMessage } from './messages';
export function Conversation({ ctx, agent, view, session, onSession }: { ctx: Context; agent: string; view: AgentView; session: Session | undefined; onSession: (s: Session) => void }) {
  const [messages, setMessages] = useState<Message[]>([]);
  const [answers, setAnswers] = useState<Record<string, CompletionResponse>>({});
  const [streaming, setStreaming] = useState<{ prompt: string; text: string }>();
  const [prompt, setPrompt] = useState('');
  const [attachments, setAttachments] = useState<{ object_id: string; display_name: string }[]>([]);
  const [error, setError] = useState<unknown>();
  const end = useRef<HTMLLIElement>(null);

  useEffect(() => {
    setMessages([]);
    if (session) ctx.api.all<Message>('core', `/sessions/${session.id}/messages`).then(setMessages, setError);
  }, [session?.id]);
  useEffect(() => end.current?.scrollIntoView({ block: 'end' }), [messages.length, streaming?.text]);

  const ensureSession = async () => session ?? (await ctx.api.json<Session>('core', '/sessions', { method: 'POST', json: { name: prompt.slice(0, 60) || 'New Chat' } }));

  const send = async () => {
    const text = prompt.trim();
    if (!text || streaming) return;
    setError(undefined);
    const s = await ensureSession();
    if (s.id !== session?.id) onSession(s);
    setPrompt('');
    setStreaming({ prompt: text, text: '' });
    try {
      const answer = await ctx.api.stream({ user_prompt: text, agent_name: agent, session_id: s.id, ...(attachments.length ? { attachments: attachments.map((a) => a.object_id) } : {}) }, (delta) =>
        setStreaming((st) => st && { ...st, text: st.text + delta }),
      );
      setAnswers((a) => ({ ...a, [answer.operation_id]: answer }));
      setAttachments([]);
      setMessages(await ctx.api.all<Message>('core', `/sessions/${s.id}/messages`));
    } catch (e) {
      setPrompt(text);
      setError(e);
    } finally {
      setStreaming(undefined);
    }
  };

  const upload = async (file: File) => {
    const s = await ensureSession();
    if (s.id !== session?.id) onSession(s);
    const form = new FormData();
    form.set('file', file);
    form.set('agent_name', agent);
    form.set('session_id', s.id);
    const uploaded = await ctx.api.json<{ object_id: string; display_name: string }>('core', '/files/upload', { method: 'POST', body: form });
    setAttachments((a) => [...a, uploaded]);
  };

  return (
    <section class="conversation" aria-label="Conversation">
      <ol class="messages" aria-live="polite">
        {messages.length === 0 && !streaming && view.welcome_message && <li class="message welcome">{view.welcome_message}</li>}
        {messages.map((m) =>
          m.sender === 'Assistant' && session ? (
            <AssistantMessage key={m.id} ctx={ctx} view={view} session={session} m={m} answer={m.operation_id ? answers[m.operation_id] : undefined} onRated={(r) => setMessages((all) => all.map((x) => (x.id === r.id ? r : x)))} />
          ) : (
            <li key={m.id} class="message user">
              <span class="sender">{m.sender_display_name || 'You'}</span>
              <div class="text">{m.text}</div>
              {view.show_message_tokens && <div class="meta tokens">{m.tokens} tokens</div>}
            </li>
          ),
        )}
        {streaming && (
          <>
            <li class="message user">
              <div class="text">{streaming.prompt}</div>
            </li>
            <li class="message assistant streaming" aria-busy="true">
              <div class="text">{streaming.text || '…'}</div>
            </li>
          </>
        )}
        <li ref={end} class="end" aria-hidden="true" />
      </ol>
      <ErrorText error={error} />
      <form
        class="composer"
        onSubmit={(e) => {
          e.preventDefault();
          void send();
        }}
      >
        {attachments.length > 0 && (
          <ul class="attachments" aria-label="Attached files">
            {attachments.map((a) => (
              <li key={a.object_id}>{a.display_name}</li>
            ))}
          </ul>
        )}
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
        {view.show_file_upload && <FilePicker id="upload" label="Attach a file" onFile={(file) => void upload(file).catch(setError)} />}
        <button type="submit" disabled={!!streaming}>
          Send
        </button>
      </form>
    </section>
  );
}
