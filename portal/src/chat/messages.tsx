// One answer as the chat shows it: its text as Markdown, its sources with their scores, token counts, content
// artifacts, the prompt the model was sent, and its rating. Everything comes from the stored message, so a
// reloaded conversation shows the same as a live one.
import { useEffect, useState } from 'preact/hooks';
import { answer, download } from '../api';
import { ThumbDown, ThumbUp } from '../icons';
import type { Citation, CompletionPrompt, FileArtifact, Message, Session, ToolExecutionArtifact } from '../schemas';
import { type Context, ErrorText } from '../shell';
import type { AgentView } from './agent-view';
import { Markdown } from './markdown';

export function Citations({ citations }: { citations: readonly Citation[] }) {
  return (
    <details class="citations" open>
      <summary>Sources ({citations.length})</summary>
      <ol>
        {citations.map((c) => (
          <li key={c.id}>
            <cite>{c.title || c.source}</cite> <span class="muted">{c.source}</span>{' '}
            <span class="score">score {c.score.toFixed(2)}</span>
            <blockquote>{c.text.length > 300 ? `${c.text.slice(0, 300)}…` : c.text}</blockquote>
          </li>
        ))}
      </ol>
    </details>
  );
}

type Artifact = NonNullable<Message['content_artifacts']>[number];
const isToolExecution = (a: Artifact): a is ToolExecutionArtifact => a.type === 'ToolExecution';
const isFile = (a: Artifact): a is FileArtifact =>
  a.type === 'File' && typeof (a as FileArtifact).file_object_id === 'string';

/** A file the answer produced (the code interpreter's): an image inline, anything else as a download. */
function FileOutput({ ctx, file }: { ctx: Context; file: FileArtifact }) {
  const [url, setUrl] = useState<string>();
  const [error, setError] = useState<unknown>();
  const id = file.file_object_id.split('/').pop() ?? '';
  useEffect(() => {
    let made: string | undefined;
    download(ctx.api.core.GET('/files/{fileId}/content', { params: { path: { fileId: id } }, parseAs: 'blob' })).then(
      (b) => setUrl((made = URL.createObjectURL(b))),
      setError,
    );
    return () => made && URL.revokeObjectURL(made);
  }, [id]);
  return (
    <figure class="file-output">
      {url && file.content_type.startsWith('image/') && <img src={url} alt={file.file_name} />}
      <figcaption>
        {url ? (
          <a href={url} download={file.file_name}>
            {file.file_name}
          </a>
        ) : (
          file.file_name
        )}{' '}
        <span class="muted">{file.content_type}</span>
      </figcaption>
      <ErrorText error={error} />
    </figure>
  );
}

/**
 * A content artifact in words: a tool execution by its tool, function, outcome and time; others by their type
 * and name.
 */
function artifactText(a: Artifact): string {
  if (isToolExecution(a)) return `${a.tool_name}: ${a.function_name} (${a.outcome.toLowerCase()}, ${a.duration_ms} ms)`;
  return 'name' in a && typeof a.name === 'string' ? `${a.type}: ${a.name}` : a.type;
}

/** The completion prompt of a turn, read when it is opened (only the session's owner may). */
function ViewPrompt({ ctx, session, id }: { ctx: Context; session: Session; id: string }) {
  const [prompt, setPrompt] = useState<CompletionPrompt>();
  const [error, setError] = useState<unknown>();
  const load = () => {
    if (prompt) return;
    const path = { sessionId: session.id, completionPromptId: id };
    answer(ctx.api.core.GET('/sessions/{sessionId}/completionprompts/{completionPromptId}', { params: { path } })).then(
      setPrompt,
      setError,
    );
  };
  return (
    <details class="prompt" onToggle={(e) => e.currentTarget.open && load()}>
      <summary>View prompt</summary>
      <ErrorText error={error} />
      {prompt && (
        <ol class="prompt-messages" aria-label="Prompt sent to the model">
          {prompt.messages.map((m, i) => (
            <li key={i}>
              <strong>{m.role}</strong>
              <pre>{typeof m.content === 'string' ? m.content : JSON.stringify(m.content, null, 2)}</pre>
            </li>
          ))}
        </ol>
      )}
    </details>
  );
}

export function AssistantMessage({
  ctx,
  view,
  session,
  m,
  sender,
  onRated,
}: {
  ctx: Context;
  view: AgentView;
  session: Session;
  m: Message;
  sender: string;
  onRated: (m: Message) => void;
}) {
  const [error, setError] = useState<unknown>();
  const [shared, setShared] = useState(false);
  const rate = (rating: boolean, share = false) =>
    ctx.api.core
      .POST('/sessions/{sessionId}/message/{messageId}/rate', {
        params: { path: { sessionId: session.id, messageId: m.id } },
        body: { rating, ...(share ? { share_prompt_with_owner: true } : {}) },
      })
      .then(() => {
        setShared(share);
        onRated({ ...m, rating });
      })
      .catch(setError);
  const citations = m.citations ?? [];
  const artifacts = m.content_artifacts ?? [];
  return (
    <li class="message assistant">
      <span class="sender">{sender}</span>
      <Markdown text={m.text} />
      {artifacts.filter(isFile).map((f) => (
        <FileOutput key={f.file_object_id} ctx={ctx} file={f} />
      ))}
      {citations.length > 0 && <Citations citations={citations} />}
      {view.show_content_artifacts && artifacts.length > 0 && (
        <details class="artifacts">
          <summary>Artifacts ({artifacts.length})</summary>
          <ul>
            {artifacts.map((a, i) => (
              <li key={i}>{artifactText(a)}</li>
            ))}
          </ul>
        </details>
      )}
      <div class="meta">
        {view.show_message_tokens && <span class="tokens">{m.tokens} completion tokens</span>}
        {view.show_view_prompt && m.completion_prompt_id && (
          <ViewPrompt ctx={ctx} session={session} id={m.completion_prompt_id} />
        )}
        {view.show_message_rating && (
          <span class="rating" role="group" aria-label="Rate this answer">
            <button
              class="icon"
              aria-label="Good answer"
              aria-pressed={m.rating === true}
              onClick={() => void rate(true)}
            >
              <ThumbUp />
            </button>
            <button
              class="icon"
              aria-label="Bad answer"
              aria-pressed={m.rating === false}
              onClick={() => void rate(false)}
            >
              <ThumbDown />
            </button>
          </span>
        )}
        {view.show_message_rating && m.rating === false && (
          // Consent, asked for after a thumbs-down: only this turn's prompt goes to the owner, never who rated.
          <button class="link share" aria-pressed={shared} disabled={shared} onClick={() => void rate(false, true)}>
            {shared ? "Prompt shared with the agent's owner" : "Share this prompt with the agent's owner to improve it"}
          </button>
        )}
      </div>
      <ErrorText error={error} />
    </li>
  );
}
