// The chat portal: the agents the user may use, their sessions, a conversation with streamed answers
// (citations, token counts, ratings, file upload and the welcome message as the agent's flags say), and the
// user's memory.
import { useEffect, useRef, useState } from 'preact/hooks';
import type { AgentItem, Citation, CompletionResponse, Message, Session } from './api';
import { ErrorText, FilePicker, mount, saveAs, type Context } from './shell';

/** What the agent's properties say the portal shows (each true unless set false). */
interface AgentView {
  show_message_tokens: boolean;
  show_message_rating: boolean;
  show_view_prompt: boolean;
  show_file_upload: boolean;
  show_content_artifacts: boolean;
  welcome_message: string | null;
}

const FLAGS = ['show_message_tokens', 'show_message_rating', 'show_view_prompt', 'show_file_upload', 'show_content_artifacts'] as const;

async function agentView({ api }: Context, agent: string): Promise<AgentView> {
  const r = await api
    .json<{ resource: { properties: Record<string, unknown>; metadata_properties: Record<string, unknown> } }>('management', `/providers/Svc.Agent/agents/${encodeURIComponent(agent)}/get-properties`, {
      method: 'POST',
      json: { property_names: [...FLAGS], metadata_property_names: ['welcome_message'] },
    })
    .catch(() => undefined); // no read access to the agent's properties: the defaults
  const p = r?.resource.properties ?? {};
  const welcome = r?.resource.metadata_properties.welcome_message;
  return { ...(Object.fromEntries(FLAGS.map((f) => [f, p[f] !== false])) as Record<(typeof FLAGS)[number], boolean>), welcome_message: typeof welcome === 'string' ? welcome : null };
}

function Sessions({ ctx, current, onSelect }: { ctx: Context; current: Session | undefined; onSelect: (s: Session | undefined) => void }) {
  const [sessions, setSessions] = useState<Session[]>([]);
  const [next, setNext] = useState<string>();
  const [error, setError] = useState<unknown>();
  const load = async (continuation?: string) => {
    const p = await ctx.api.page<Session>('core', '/sessions', continuation);
    setSessions((s) => (continuation ? [...s, ...p.items] : p.items));
    setNext(p.next);
  };
  useEffect(() => void load().catch(setError), [current?.id, current?.name]);
  const create = async () => onSelect(await ctx.api.json<Session>('core', '/sessions', { method: 'POST', json: { name: 'New Chat' } }));
  const rename = async (s: Session) => {
    const name = prompt('New name of the session', s.name);
    if (!name) return;
    const renamed = await ctx.api.json<Session>('core', `/sessions/${s.id}/rename`, { method: 'POST', json: { name } });
    setSessions((all) => all.map((x) => (x.id === s.id ? renamed : x)));
    if (current?.id === s.id) onSelect(renamed);
  };
  const remove = async (s: Session) => {
    if (!confirm(`Delete “${s.name}” and all its messages?`)) return;
    await ctx.api.call('core', `/sessions/${s.id}`, { method: 'DELETE' });
    setSessions((all) => all.filter((x) => x.id !== s.id));
    if (current?.id === s.id) onSelect(undefined);
  };
  const guard = (f: () => Promise<void>) => () => void f().catch(setError);
  return (
    <section class="sessions" aria-label="Sessions">
      <button onClick={guard(create)}>New chat</button>
      <ErrorText error={error} />
      <ul>
        {sessions.map((s) => (
          <li key={s.id} class={s.id === current?.id ? 'active' : ''}>
            <button class="link" aria-current={s.id === current?.id ? 'true' : undefined} onClick={() => onSelect(s)}>
              {s.name}
            </button>
            <button class="icon" aria-label={`Rename ${s.name}`} onClick={guard(() => rename(s))}>
              ✎
            </button>
            <button class="icon" aria-label={`Delete ${s.name}`} onClick={guard(() => remove(s))}>
              ×
            </button>
          </li>
        ))}
      </ul>
      {next && <button onClick={guard(() => load(next))}>More sessions</button>}
    </section>
  );
}

function Citations({ citations }: { citations: Citation[] }) {
  return (
    <details class="citations" open>
      <summary>Sources ({citations.length})</summary>
      <ol>
        {citations.map((c) => (
          <li key={c.id}>
            <cite>{c.title || c.source}</cite> <span class="muted">{c.source}</span>
            <blockquote>{c.text.length > 300 ? `${c.text.slice(0, 300)}…` : c.text}</blockquote>
          </li>
        ))}
      </ol>
    </details>
  );
}

function AssistantMessage({ ctx, view, session, m, answer, onRated }: { ctx: Context; view: AgentView; session: Session; m: Message; answer: CompletionResponse | undefined; onRated: (m: Message) => void }) {
  const [error, setError] = useState<unknown>();
  const rate = (rating: boolean) =>
    ctx.api
      .json<Message>('core', `/sessions/${session.id}/message/${m.id}/rate`, { method: 'POST', json: { rating } })
      .then(() => onRated({ ...m, rating }))
      .catch(setError);
  return (
    <li class="message assistant">
      <span class="sender">{m.sender_display_name}</span>
      <div class="text">{m.text}</div>
      {answer && answer.citations.length > 0 && <Citations citations={answer.citations} />}
      {view.show_content_artifacts && m.content_artifacts && m.content_artifacts.length > 0 && (
        <details class="artifacts">
          <summary>Artifacts ({m.content_artifacts.length})</summary>
          <ul>
            {m.content_artifacts.map((a, i) => (
              <li key={a.id ?? i}>{a.title ?? a.type ?? 'artifact'}</li>
            ))}
          </ul>
        </details>
      )}
      <div class="meta">
        {view.show_message_tokens && <span class="tokens">{m.tokens} tokens</span>}
        {view.show_view_prompt && m.operation_id && (
          <details class="prompt">
            <summary>View prompt</summary>
            <p>Operation {m.operation_id}</p>
            {answer && <pre>{answer.user_prompt}</pre>}
          </details>
        )}
        {view.show_message_rating && (
          <span class="rating" role="group" aria-label="Rate this answer">
            <button class="icon" aria-label="Good answer" aria-pressed={m.rating === true} onClick={() => void rate(true)}>
              👍
            </button>
            <button class="icon" aria-label="Bad answer" aria-pressed={m.rating === false} onClick={() => void rate(false)}>
              👎
            </button>
          </span>
        )}
      </div>
      <ErrorText error={error} />
    </li>
  );
}

function Conversation({ ctx, agent, view, session, onSession }: { ctx: Context; agent: string; view: AgentView; session: Session | undefined; onSession: (s: Session) => void }) {
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

function Memory({ ctx }: { ctx: Context }) {
  const [content, setContent] = useState<string>();
  const [error, setError] = useState<unknown>();
  const read = () => ctx.api.json<{ content_markdown: string }>('core', '/memory?scope=user').then((m) => setContent(m.content_markdown), setError);
  useEffect(() => void read(), []);
  const exportIt = async () => {
    await saveAs(await ctx.api.call('core', '/memory/export?scope=user'), 'memory.md');
  };
  const importIt = async (file: File) => {
    await ctx.api.call('core', '/memory/import', { method: 'POST', json: { scope: 'user', content_markdown: await file.text(), mode: 'append' } });
    await read();
  };
  const clear = async () => {
    if (!confirm('Clear everything the agents remember about you? This cannot be undone.')) return;
    await ctx.api.call('core', '/memory/clear', { method: 'POST', json: { scope: 'user', confirm: true } });
    await read();
  };
  return (
    <section class="memory" aria-label="Your memory">
      <h2>What the agents remember about you</h2>
      <ErrorText error={error} />
      <pre class="memory-body">{content || 'Nothing yet.'}</pre>
      <div class="row">
        <button onClick={() => void exportIt().catch(setError)}>Export</button>
        <FilePicker id="memory-import" label="Import…" accept=".md,text/markdown,text/plain" onFile={(file) => void importIt(file).catch(setError)} />
        <button class="danger" onClick={() => void clear().catch(setError)}>
          Clear…
        </button>
      </div>
    </section>
  );
}

function Chat({ ctx }: { ctx: Context }) {
  const [agents, setAgents] = useState<AgentItem[]>();
  const [agent, setAgent] = useState<string>();
  const [view, setView] = useState<AgentView>();
  const [session, setSession] = useState<Session>();
  const [tab, setTab] = useState<'chat' | 'memory'>('chat');
  const [error, setError] = useState<unknown>();
  useEffect(() => {
    ctx.api.json<AgentItem[]>('core', '/completions/agents').then((list) => {
      setAgents(list);
      setAgent(list[0]?.resource.name);
    }, setError);
  }, []);
  useEffect(() => {
    if (agent) agentView(ctx, agent).then(setView, setError);
  }, [agent]);
  if (error) return <ErrorText error={error} />;
  if (!agents) return <p aria-busy="true">Loading…</p>;
  if (agents.length === 0) return <p>No agent is available to you yet: ask an administrator for access.</p>;
  return (
    <div class="chat">
      <aside>
        <label for="agent">Agent</label>
        <select id="agent" value={agent} onChange={(e) => setAgent(e.currentTarget.value)}>
          {agents.map((a) => (
            <option key={a.resource.name} value={a.resource.name}>
              {a.resource.display_name || a.resource.name}
            </option>
          ))}
        </select>
        <div class="tabs" role="tablist">
          <button role="tab" aria-selected={tab === 'chat'} onClick={() => setTab('chat')}>
            Chats
          </button>
          <button role="tab" aria-selected={tab === 'memory'} onClick={() => setTab('memory')}>
            Memory
          </button>
        </div>
        <Sessions ctx={ctx} current={session} onSelect={(s) => (setSession(s), setTab('chat'))} />
      </aside>
      <main>{tab === 'memory' ? <Memory ctx={ctx} /> : agent && view ? <Conversation ctx={ctx} agent={agent} view={view} session={session} onSession={setSession} /> : <p aria-busy="true">Loading…</p>}</main>
    </div>
  );
}

mount('Chat', (ctx) => <Chat ctx={ctx} />);
