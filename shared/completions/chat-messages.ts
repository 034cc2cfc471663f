// The messages a chat model is sent for a turn: the agent's prompt, retrieved knowledge, the history, and the
// user message with the attachments' text and images.
import { attachmentContent } from '../files/attachment-content.js';
import { unblocked, type ContentArtifact, type MessageDoc } from '../conversations/conversations.js';
import { knowledgeContext, type Citation } from '../knowledge/retrieval.js';
import type { ChatMessage, ContentPart } from '../models/wire.js';
import type { ChatChain } from './agent-chain.js';
import type { CompletionDeps } from './completion-deps.js';
import type { TurnRun } from './turn.js';

/** A message of the history: the session's recent copy, or the message document with its content artifacts. */
type EarlierMessage = Pick<MessageDoc, 'sender' | 'text'> & Partial<Pick<MessageDoc, 'content_artifacts'>>;

/**
 * System prompt, retrieved knowledge, history (when enabled, last max_history turns, with the content artifacts of the
 * types the agent names; a facade's client's own messages), then the user message: the attachments' text before the
 * prompt (as rewritten), and their images as image parts. `kept` is the same with each image named by its
 * attachment's object id.
 */
export async function buildMessages(
  s: CompletionDeps,
  { admitted, chain, options }: TurnRun<ChatChain>,
  { prompt, citations }: { prompt: string; citations: readonly Citation[] },
): Promise<{ messages: ChatMessage[]; kept: ChatMessage[] }> {
  const { session, attachments, facade } = admitted;
  const messages: ChatMessage[] = [];
  if (chain.prompt.prefix.length > 0) messages.push({ role: 'system', content: chain.prompt.prefix });
  if (citations.length > 0) messages.push({ role: 'system', content: knowledgeContext(citations) });
  const history = chain.agent.conversation_history_settings;
  if (session && history?.enabled) {
    const artifactTypes = (history.history_content_artifact_types ?? '')
      .split(',')
      .map((t) => t.trim())
      .filter((t) => t.length > 0);
    // Artifacts are on the message documents only: the session's recent copy suffices when none are wanted.
    const earlier: readonly EarlierMessage[] =
      artifactTypes.length > 0
        ? (await s.conversations.history(session.pk, session.id, history.max_history * 2)).filter(unblocked)
        : await s.conversations.recentHistory(session, history.max_history * 2);
    for (const m of earlier) {
      const artifacts = m.content_artifacts?.filter((a) => artifactTypes.includes(a.type));
      messages.push({
        role: m.sender === 'User' ? 'user' : 'assistant',
        content: artifacts?.length ? `${m.text}\n\n${artifactText(artifacts)}` : m.text,
      });
    }
  }
  // A facade's client keeps its own history: the messages it sent before the prompt, as they came.
  if (facade?.history) messages.push(...facade.history);
  const vision = chain.model.capabilities?.includes('vision') ?? false;
  const attached =
    attachments.length > 0
      ? await attachmentContent(s, attachments, { vision, signal: options.signal })
      : { context: '', images: [] };
  const suffix =
    chain.prompt.suffix !== undefined && chain.prompt.suffix.length > 0 ? `\n\n${chain.prompt.suffix}` : '';
  const text = `${attached.context ? `${attached.context}\n\n` : ''}${prompt}${suffix}`;
  const userMessage = (image: (i: { objectId: string; dataUrl: string }) => string): ChatMessage => ({
    role: 'user',
    content:
      attached.images.length === 0
        ? text
        : [
            { type: 'text', text },
            ...attached.images.map((i): ContentPart => ({ type: 'image_url', image_url: { url: image(i) } })),
          ],
  });
  return {
    messages: [...messages, userMessage((i) => i.dataUrl)],
    kept: [...messages, userMessage((i) => i.objectId)],
  };
}

/** Content artifacts of earlier turns as the history gives them to the model. */
const artifactText = (artifacts: readonly ContentArtifact[]) =>
  `Content artifacts of this answer:\n${artifacts.map((a) => JSON.stringify(a)).join('\n')}`;
