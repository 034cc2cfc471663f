// One answer as the chat shows it: its citations, token counts, content artifacts and rating.
import { useState } from 'preact/hooks';
import type { Citation, CompletionResponse, Message, Session } from '../api';
import { type Context, ErrorText } from '../shell';
import type { AgentView } from './agent-view';
export function Citations({ citations }: { citations: Citation[] }) {
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

export function AssistantMessage({ ctx, view, session, m, answer, onRated }: { ctx: Context; view: AgentView; session: Session; m: Message; answer: CompletionResponse | undefined; onRated: (m: Message) => void }) {
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
              <li key={i}>
                {a.tool_name}: {a.function_name} ({a.outcome.toLowerCase()}, {a.duration_ms} ms)
              </li>
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
