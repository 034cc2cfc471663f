// What the pre-completion shields screen: everything of the caller's that reaches the model, as one text.
import { attachmentTexts } from '../files/attachment-content.js';
import { workflowHistory } from './workflow-plugin.js';
import type { CompletionDeps } from './completion-deps.js';
import type { TurnRun } from './turn.js';

/**
 * Everything of the caller's that reaches the model, as one text for the pre-completion shields: the prompt,
 * the session's earlier turns the model is given (some may have been answered by an agent without shields), a
 * facade's earlier messages and instructions, the text of its model fields (a schema's descriptions, stop
 * sequences), and the attachments' names and text (kept after its first extraction: the model's read is the same).
 */
export async function callerText(s: CompletionDeps, { admitted, chain, options }: TurnRun): Promise<string> {
  const { request, facade, attachments, agent, session } = admitted;
  const history = agent.conversation_history_settings;
  const window = chain.kind === 'plugin' ? workflowHistory(agent) : history?.enabled ? history.max_history * 2 : 0;
  const earlier = session && window > 0 ? await s.conversations.recentHistory(session, window) : [];
  const texts = earlier.map((m) => m.text);
  texts.push(
    ...(facade?.history ?? []).map((m) =>
      typeof m.content === 'string' ? m.content : m.content.map((p) => (p.type === 'text' ? p.text : '')).join('\n'),
    ),
  );
  texts.push(...stringsIn(facade?.parameters));
  if (attachments.length > 0)
    texts.push(...(await attachmentTexts(s, attachments, options.signal)).flatMap((a) => [a.file_name, a.text]));
  texts.push(request.user_prompt);
  return texts.filter((t) => t !== '').join('\n\n');
}

/** Every string in a JSON value (its objects' keys too), however deep: walked without recursion. */
function stringsIn(value: unknown): string[] {
  const found: string[] = [];
  const stack = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'string') found.push(v);
    else if (Array.isArray(v)) {
      const items: readonly unknown[] = v;
      for (const inner of items) stack.push(inner);
    } else if (typeof v === 'object' && v !== null)
      for (const [key, inner] of Object.entries(v)) stack.push(key, inner);
  }
  return found;
}
