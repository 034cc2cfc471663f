// Sessions and their messages, one partition per user: every read and write is scoped to the
// owner's UPN, so another user's session id is simply not found.
import { randomUUID } from 'node:crypto';
import { ownerKey } from '../auth/principal.js';
import { notFound, validationError } from '../errors.js';
import { CallCancelledError } from '../models/upstream-errors.js';
import {
  ConflictError,
  NotFoundError,
  PreconditionFailedError,
  type Container,
  type Doc,
  type DocsOf,
  type Page,
  type Stored,
} from '../store/types.js';
import { updateDocument } from '../store/update.js';
import type { Citation } from '../knowledge/retrieval.js';
import type { ChatMessage } from '../models/wire.js';
import { narrowed } from '../store/narrowed.js';
import { recentOf, withRecent, type RecentMessage } from './recent.js';

export interface SessionDoc extends Doc {
  type: 'Session';
  name: string;
  upn: string;
  created_on: string;
  updated_on: string;
  day: string;
  /**
   * The session's last messages, oldest first, within RECENT_LIMITS (recent.ts): a turn reads its history in the same
   * point read that checks the session, with no query. Absent on sessions from before it existed.
   */
  recent?: RecentMessage[];
  /** `recent` holds every message of the session. */
  recent_complete?: boolean;
}

/** Whether a message may go to a model as history: not one of a turn the shields blocked. */
export const unblocked = (m: { blocked?: true }) => m.blocked !== true;

export interface MessageDoc extends Doc {
  type: 'Message';
  session_id: string;
  sender: 'User' | 'Assistant';
  sender_display_name: string;
  text: string;
  tokens: number;
  timestamp: string;
  /** UTC day and hour of `timestamp`, for daily and peak-hour analytics. */
  day: string;
  hour: number;
  upn: string;
  operation_id: string;
  agent_name: string;
  rating?: boolean | null;
  rating_comments?: string | null;
  /** What the turn did besides answering: tool executions (the analytics' tool figures count them). */
  content_artifacts?: ContentArtifact[];
  /** The knowledge the answer was given (assistant messages). */
  citations?: Citation[];
  /** The completion prompt of the turn (assistant messages; null when no model was asked, e.g. a cache hit). */
  completion_prompt_id?: string | null;
  /** Of a turn the shields blocked: kept for its user and the record, never sent to a model again. */
  blocked?: true;
}

/** Something a turn produced besides its text: at least a `type` (`ToolExecution`, `File`). */
export interface ContentArtifact {
  type: string;
}

/** The prompt of one turn exactly as the main model was sent it; kept in the session's partition. */
export interface CompletionPromptDoc extends Doc {
  type: 'CompletionPrompt';
  session_id: string;
  operation_id: string;
  created_on: string;
  /** Same as created_on: the session index orders the partition's items by it. */
  timestamp: string;
  upn: string;
  messages: ChatMessage[];
}

declare module '../store/types.js' {
  interface StoredDocs {
    'sessions/session': SessionDoc;
    'sessions/message': MessageDoc;
    'sessions/completion-prompt': CompletionPromptDoc;
  }
}

/** The completion prompt id of an operation's turn. */
export const completionPromptId = (operationId: string) => `${operationId}-prompt`;

export const dayOf = (iso: string) => iso.slice(0, 10);
export const hourOf = (iso: string) => Number(iso.slice(11, 13));

/** Message ids follow from the operation id, so a redelivered operation writes the same two messages. */
export const messageIds = (operationId: string) => ({
  user: `${operationId}-user`,
  assistant: `${operationId}-assistant`,
});

export function presentSession(s: SessionDoc, withUpdated = true) {
  return {
    id: s.id,
    name: s.name,
    type: s.type,
    upn: s.upn,
    messages: [],
    created_on: s.created_on,
    ...(withUpdated ? { updated_on: s.updated_on } : {}),
  };
}

export function presentMessage(m: MessageDoc) {
  return {
    id: m.id,
    type: m.type,
    session_id: m.session_id,
    sender: m.sender,
    sender_display_name: m.sender_display_name,
    text: m.text,
    tokens: m.tokens,
    timestamp: m.timestamp,
    operation_id: m.operation_id,
    ...(m.sender === 'Assistant'
      ? {
          rating: m.rating ?? null,
          rating_comments: m.rating_comments ?? null,
          citations: m.citations ?? [],
          content_artifacts: m.content_artifacts ?? [],
          completion_prompt_id: m.completion_prompt_id ?? null,
        }
      : {}),
  };
}

export function presentCompletionPrompt(p: CompletionPromptDoc) {
  return {
    id: p.id,
    session_id: p.session_id,
    operation_id: p.operation_id,
    created_on: p.created_on,
    messages: p.messages,
  };
}

/** The kinds of the sessions container's documents this module writes, told apart by `type`. */
export const isSession = (doc: DocsOf<'sessions'>): doc is SessionDoc => doc.type === 'Session';
export const isMessage = (doc: DocsOf<'sessions'>): doc is MessageDoc => doc.type === 'Message';

/** A message of a turn to record: what the session and the turn's time do not say. */
export type TurnMessage = Omit<MessageDoc, 'id' | 'pk' | 'type' | 'session_id' | 'day' | 'hour' | 'upn'>;

/** One turn to record: its two messages, the prompt the model was sent, and the turn's listing (turns.ts). */
export interface TurnRecord {
  user: TurnMessage;
  assistant: TurnMessage;
  prompt?: ChatMessage[] | undefined;
  listing?: { id: string; etag: string } | undefined;
}

/** Every method takes the owner's UPN and keys the data by `ownerKey` of it. */
export class Conversations {
  private readonly sessions: Container<SessionDoc>;
  private readonly messages: Container<MessageDoc>;

  constructor(private readonly container: Container<DocsOf<'sessions'>>) {
    this.sessions = narrowed(container, isSession);
    this.messages = narrowed(container, isMessage);
  }

  /** A page of the owner's sessions, most recently active first. */
  list(owner: string, continuation: string | undefined, limit: number): Promise<Page<SessionDoc>> {
    return this.sessions.query({
      partition: ownerKey(owner),
      where: [{ field: 'type', op: 'eq', value: 'Session' }],
      orderBy: [{ field: 'updated_on', direction: 'desc' }],
      limit,
      ...(continuation !== undefined ? { continuation } : {}),
    });
  }

  async create(owner: string, name: string): Promise<Stored<SessionDoc>> {
    const upn = ownerKey(owner);
    const now = new Date().toISOString();
    return this.sessions.create({
      id: randomUUID(),
      pk: upn,
      type: 'Session',
      name,
      upn,
      created_on: now,
      updated_on: now,
      day: dayOf(now),
      recent: [],
      recent_complete: true,
    });
  }

  /** The caller's session, or 404: another user's id is indistinguishable from an unknown one. */
  async get(owner: string, sessionId: string): Promise<Stored<SessionDoc>> {
    const doc = await this.container.read(ownerKey(owner), sessionId.toLowerCase());
    if (doc?.type !== 'Session') throw notFound(`Session ${sessionId} not found`);
    return doc;
  }

  /** Renames one of the owner's sessions (404 for anyone else's); its activity time is unchanged. */
  async rename(owner: string, sessionId: string, name: string): Promise<SessionDoc> {
    const session = await this.get(owner, sessionId);
    return this.sessions.patch(session.pk, session.id, [{ op: 'set', path: 'name', value: name }]);
  }

  /** A page of the messages of one of the owner's sessions, oldest first (404 for anyone else's session). */
  async messagesOf(
    owner: string,
    sessionId: string,
    { continuation, limit }: { continuation: string | undefined; limit: number },
  ): Promise<Page<MessageDoc>> {
    await this.get(owner, sessionId);
    return this.messages.query({
      partition: ownerKey(owner),
      where: this.ofSession(sessionId.toLowerCase()),
      orderBy: [{ field: 'timestamp' }],
      limit,
      ...(continuation !== undefined ? { continuation } : {}),
    });
  }

  private ofSession(sessionId: string, types: readonly string[] = ['Message']) {
    return [
      types.length === 1
        ? { field: 'type', op: 'eq' as const, value: types[0] ?? 'Message' }
        : { field: 'type', op: 'in' as const, value: types },
      { field: 'session_id', op: 'eq' as const, value: sessionId },
    ];
  }

  /** A completion prompt of one of the owner's sessions; anyone else's, or an unknown one, is 404. */
  async completionPrompt(owner: string, sessionId: string, promptId: string): Promise<CompletionPromptDoc> {
    const session = await this.get(owner, sessionId);
    const doc = await this.container.read(session.pk, promptId);
    if (doc?.type !== 'CompletionPrompt' || doc.session_id !== session.id)
      throw notFound(`Completion prompt ${promptId} not found`);
    return doc;
  }

  /** Messages of a session, oldest first; the last `limit` when given. */
  async history(owner: string, sessionId: string, limit?: number): Promise<MessageDoc[]> {
    const upn = ownerKey(owner);
    const where = this.ofSession(sessionId);
    if (limit === undefined) {
      return (await this.messages.query({ partition: upn, where, orderBy: [{ field: 'timestamp' }] })).items;
    }
    if (limit <= 0) return [];
    const { items } = await this.messages.query({
      partition: upn,
      where,
      orderBy: [{ field: 'timestamp', direction: 'desc' }],
      limit,
    });
    return items.reverse();
  }

  /** The last `limit` messages for a turn's history: from the session document when it holds them, else a query. */
  async recentHistory(
    session: Stored<SessionDoc>,
    limit: number,
  ): Promise<readonly Pick<MessageDoc, 'sender' | 'text'>[]> {
    if (limit <= 0) return [];
    const recent =
      session.recent && (session.recent_complete === true || session.recent.length >= limit)
        ? session.recent.slice(-limit)
        : await this.history(session.pk, session.id, limit);
    return recent.filter(unblocked);
  }

  async delete(owner: string, sessionId: string): Promise<void> {
    const upn = ownerKey(owner);
    const session = await this.get(upn, sessionId);
    const { items } = await this.container.query({
      partition: upn,
      where: this.ofSession(session.id, ['Message', 'CompletionPrompt', 'Turn']),
    });
    for (const m of items) await this.container.delete(upn, m.id);
    await this.sessions.delete(upn, session.id);
  }

  /** A previously recorded assistant answer of this operation, if any (redelivery reuses it). */
  async recordedAnswer(owner: string, operationId: string): Promise<MessageDoc | undefined> {
    return this.messages.read(ownerKey(owner), messageIds(operationId).assistant);
  }

  /**
   * Records a turn in one atomic write of the session's partition: both messages, the completion prompt,
   * the session with its new updated_on and recent messages, applied to the session as it stands at the
   * write (a concurrent turn or rename is never overwritten), and the removal of the turn's listing
   * (turns.ts) while it is as it was: a turn cancelled meanwhile throws CallCancelledError and writes
   * nothing. A turn already recorded (a redelivery) is not written twice. True when the listing went with it.
   */
  async recordTurn(session: Stored<SessionDoc>, { user, assistant, prompt, listing }: TurnRecord): Promise<boolean> {
    const upn = session.pk;
    const ids = messageIds(user.operation_id);
    const base = { pk: upn, session_id: session.id, upn };
    const messages: (MessageDoc | CompletionPromptDoc)[] = [
      { ...base, type: 'Message', ...user, id: ids.user, day: dayOf(user.timestamp), hour: hourOf(user.timestamp) },
      {
        ...base,
        type: 'Message',
        ...assistant,
        id: ids.assistant,
        day: dayOf(assistant.timestamp),
        hour: hourOf(assistant.timestamp),
      },
    ];
    if (prompt) {
      messages.push({
        ...base,
        type: 'CompletionPrompt',
        id: completionPromptId(user.operation_id),
        operation_id: user.operation_id,
        created_on: user.timestamp,
        timestamp: user.timestamp,
        messages: prompt,
      });
    }
    const turn = [user, assistant].map(recentOf);
    const withTurn = (current: Stored<SessionDoc>): SessionDoc | undefined =>
      current.recent?.some((m) => m.operation_id === user.operation_id)
        ? undefined
        : withRecent(current, turn, assistant.timestamp);
    // The turn's listing (turns.ts) goes in the same write, unless it changed since: the turn was cancelled.
    const unlisted = listing ? [{ op: 'delete' as const, id: listing.id, ifMatch: listing.etag }] : [];
    try {
      await this.container.writeBatch(upn, [
        {
          op: 'update',
          id: session.id,
          known: session,
          apply: (c) => (c.type === 'Session' ? withTurn(c) : undefined),
        },
        ...messages.map((doc) => ({ op: 'create' as const, doc })),
        ...unlisted,
      ]);
      return true;
    } catch (e) {
      if (e instanceof PreconditionFailedError) throw new CallCancelledError('The turn was cancelled');
      // The messages exist (recorded by a write that did not finish the session): update the session alone.
      if (e instanceof ConflictError) {
        await updateDocument(this.sessions, { pk: upn, id: session.id }, (c) => (c ? withTurn(c) : undefined));
        return false;
      }
      // The session was deleted during the turn: there is nothing to record the turn in.
      if (!(e instanceof NotFoundError)) throw e;
      return false;
    }
  }

  /**
   * Records one message of a session (a transcript of a spoken call), the session's recent messages and
   * activity time with it, in one write of the session's partition. The same message id again is ignored.
   */
  async recordMessage(
    owner: string,
    sessionId: string,
    message: Omit<MessageDoc, 'pk' | 'type' | 'session_id' | 'day' | 'hour' | 'upn'>,
  ): Promise<void> {
    const upn = ownerKey(owner);
    const session = await this.get(upn, sessionId);
    const doc: MessageDoc = {
      ...message,
      pk: upn,
      type: 'Message',
      session_id: session.id,
      upn,
      day: dayOf(message.timestamp),
      hour: hourOf(message.timestamp),
    };
    try {
      await this.container.writeBatch(upn, [
        {
          op: 'update',
          id: session.id,
          known: session,
          apply: (c) => (c.type === 'Session' ? withRecent(c, [recentOf(message)], message.timestamp) : undefined),
        },
        { op: 'create', doc },
      ]);
    } catch (e) {
      if (!(e instanceof ConflictError)) throw e;
    }
  }

  /** The user's prompt of the turn an assistant message answered (the user message of its operation). */
  async promptOf(owner: string, answer: MessageDoc): Promise<string | undefined> {
    const { items } = await this.messages.query({
      partition: ownerKey(owner),
      where: [
        ...this.ofSession(answer.session_id),
        { field: 'operation_id', op: 'eq', value: answer.operation_id },
        { field: 'sender', op: 'eq', value: 'User' },
      ],
      limit: 1,
    });
    return items[0]?.text;
  }

  /** Rates an assistant message of one of the owner's sessions (404 for anyone else's), with the rater's comments. */
  async rate(
    owner: string,
    {
      sessionId,
      messageId,
      rating,
      comments,
    }: { sessionId: string; messageId: string; rating: boolean; comments: string | null },
  ): Promise<MessageDoc> {
    const upn = ownerKey(owner);
    await this.get(upn, sessionId);
    const message = await this.container.read(upn, messageId);
    if (message?.type !== 'Message' || message.session_id !== sessionId.toLowerCase())
      throw notFound(`Message ${messageId} not found`);
    if (message.sender !== 'Assistant')
      throw validationError([{ field: 'messageId', message: 'Only assistant messages can be rated' }]);
    return this.messages.patch(upn, messageId, [
      { op: 'set', path: 'rating', value: rating },
      { op: 'set', path: 'rating_comments', value: comments },
    ]);
  }
}
