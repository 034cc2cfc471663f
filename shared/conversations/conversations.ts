// Sessions and their messages (spec 2.6), one partition per user: every read and write is scoped to the
// owner's UPN, so another user's session id is simply not found.
import { randomUUID } from 'node:crypto';
import { ownerKey } from '../auth/principal.js';
import { badRequest, notFound } from '../http/errors.js';
import { ConflictError, type Container, type Doc, type Stored } from '../store/types.js';

export interface SessionDoc extends Doc {
  type: 'Session';
  name: string;
  upn: string;
  created_on: string;
  updated_on: string;
  day: string;
}

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
}

export const dayOf = (iso: string) => iso.slice(0, 10);
export const hourOf = (iso: string) => Number(iso.slice(11, 13));

/** Message ids follow from the operation id, so a redelivered operation writes the same two messages. */
export const messageIds = (operationId: string) => ({ user: `${operationId}-user`, assistant: `${operationId}-assistant` });

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
    ...(m.sender === 'Assistant' ? { rating: m.rating ?? null, rating_comments: m.rating_comments ?? null } : {}),
  };
}

/** Every method takes the owner's UPN and keys the data by `ownerKey` of it. */
export class Conversations {
  constructor(private readonly container: Container<SessionDoc | MessageDoc>) {}

  private get sessions() {
    return this.container as Container<SessionDoc>;
  }
  private get messages() {
    return this.container as Container<MessageDoc>;
  }

  async list(owner: string): Promise<SessionDoc[]> {
    const upn = ownerKey(owner);
    const { items } = await this.sessions.query({ partition: upn, where: [{ field: 'type', op: 'eq', value: 'Session' }], orderBy: [{ field: 'updated_on', direction: 'desc' }] });
    return items;
  }

  async create(owner: string, name: string): Promise<SessionDoc> {
    const upn = ownerKey(owner);
    const now = new Date().toISOString();
    return this.sessions.create({ id: randomUUID(), pk: upn, type: 'Session', name, upn, created_on: now, updated_on: now, day: dayOf(now) });
  }

  /** The caller's session, or 404: another user's id is indistinguishable from an unknown one. */
  async get(owner: string, sessionId: string): Promise<Stored<SessionDoc>> {
    const doc = await this.container.read(ownerKey(owner), sessionId.toLowerCase());
    if (doc?.type !== 'Session') throw notFound(`Session ${sessionId} not found`);
    return doc;
  }

  async messagesOf(upn: string, sessionId: string): Promise<MessageDoc[]> {
    await this.get(upn, sessionId);
    return this.history(upn, sessionId.toLowerCase());
  }

  /** Messages of a session, oldest first; the last `limit` when given. */
  async history(owner: string, sessionId: string, limit?: number): Promise<MessageDoc[]> {
    const upn = ownerKey(owner);
    const where = [
      { field: 'type', op: 'eq' as const, value: 'Message' },
      { field: 'session_id', op: 'eq' as const, value: sessionId },
    ];
    if (limit === undefined) {
      return (await this.messages.query({ partition: upn, where, orderBy: [{ field: 'timestamp' }] })).items;
    }
    if (limit <= 0) return [];
    const { items } = await this.messages.query({ partition: upn, where, orderBy: [{ field: 'timestamp', direction: 'desc' }], limit });
    return items.reverse();
  }

  async delete(owner: string, sessionId: string): Promise<void> {
    const upn = ownerKey(owner);
    const session = await this.get(upn, sessionId);
    for (const m of await this.history(upn, session.id)) await this.messages.delete(upn, m.id);
    await this.sessions.delete(upn, session.id);
  }

  /** A previously recorded assistant answer of this operation, if any (redelivery reuses it). */
  async recordedAnswer(owner: string, operationId: string): Promise<MessageDoc | undefined> {
    return this.messages.read(ownerKey(owner), messageIds(operationId).assistant);
  }

  /** Writes both messages of a turn (each at most once: a redelivery finds them) and moves the session's updated_on. */
  async recordTurn(owner: string, sessionId: string, user: Omit<MessageDoc, 'id' | 'pk' | 'type' | 'session_id' | 'day' | 'hour' | 'upn'>, assistant: typeof user): Promise<void> {
    const upn = ownerKey(owner);
    const ids = messageIds(user.operation_id);
    const base = { pk: upn, type: 'Message' as const, session_id: sessionId, upn };
    try {
      // Both messages in one round trip, all or none: a redelivered turn finds both and writes neither.
      await this.messages.createBatch(upn, [
        { ...base, ...user, id: ids.user, day: dayOf(user.timestamp), hour: hourOf(user.timestamp) },
        { ...base, ...assistant, id: ids.assistant, day: dayOf(assistant.timestamp), hour: hourOf(assistant.timestamp) },
      ]);
    } catch (e) {
      if (!(e instanceof ConflictError)) throw e;
    }
    await this.sessions.patch(upn, sessionId, [{ op: 'set', path: 'updated_on', value: assistant.timestamp }]);
  }

  async rate(owner: string, sessionId: string, messageId: string, rating: boolean, comments: string | null): Promise<MessageDoc> {
    const upn = ownerKey(owner);
    await this.get(upn, sessionId);
    const message = await this.container.read(upn, messageId);
    if (message?.type !== 'Message' || message.session_id !== sessionId.toLowerCase()) throw notFound(`Message ${messageId} not found`);
    if (message.sender !== 'Assistant') throw badRequest('Only assistant messages can be rated', [{ field: 'messageId', message: 'Only assistant messages can be rated' }]);
    return this.messages.patch(upn, messageId, [
      { op: 'set', path: 'rating', value: rating },
      { op: 'set', path: 'rating_comments', value: comments },
    ]);
  }
}
