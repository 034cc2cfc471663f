// Personalized memory: durable markdown per user (scope user) and per user and agent
// (scope agent), in the memories resource type of Svc.Context. One document per (user) and per (user,
// agent); a missing one reads as empty; every write is an ETag-checked read-modify-write.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { ownerKey, type Principal } from '../auth/principal.js';
import { DomainError } from '../errors.js';
import type { Container, Doc } from '../store/types.js';
import { updateDocument } from '../store/update.js';

/** Which memory a call reads: the user's, the user's with one agent, or both (reads only). */
export const Scope = z.enum(['user', 'agent', 'combined'], { error: 'scope must be user, agent or combined' });
export type Scope = z.output<typeof Scope>;
/** Which memory a call writes: one document, the user's or the user's with one agent. */
export const StoredScope = z.enum(['user', 'agent'], { error: 'scope must be user or agent' });
export type StoredScope = z.output<typeof StoredScope>;

export interface MemoryDoc extends Doc {
  type: 'memory';
  scope: StoredScope;
  upn: string;
  user_name: string | null;
  name: string | null;
  agent_object_id: string | null;
  agent_name: string | null;
  content_markdown: string;
  created_on: string;
  updated_on: string;
}

declare module '../store/types.js' {
  interface StoredDocs {
    memories: MemoryDoc;
  }
}

/** A memory as the API answers it (the OpenAPI document's MemoryResponse). */
export const MemoryResponse = z
  .object({
    scope: Scope,
    upn: z.string(),
    user_name: z.string().nullable(),
    name: z.string().nullable(),
    agent_object_id: z.string().nullable(),
    agent_name: z.string().nullable(),
    content_markdown: z.string(),
    created_on: z.string().nullable(),
    updated_on: z.string().nullable(),
  })
  .meta({ id: 'MemoryResponse' });
export type MemoryResponse = z.output<typeof MemoryResponse>;

export interface AgentRef {
  objectId: string;
  name: string;
}

/** The document a write changes: the user's, or the user's with one agent. */
export interface MemoryTarget {
  scope: StoredScope;
  agent: AgentRef | undefined;
}

/** An append: the markdown and where it came from. */
export interface MemoryAppend extends MemoryTarget {
  content: string;
  provenance: Parameters<typeof appendEntry>[2];
}

/** An import: the markdown, appended under an import heading or replacing the body. */
export interface MemoryImport extends MemoryTarget {
  content: string;
  mode: 'append' | 'replace';
}

/** What a response shows: the scope asked for, the document read or written, the agent. */
interface Shown {
  scope: Scope;
  doc: MemoryDoc | undefined;
  agent?: AgentRef | undefined;
}

/** Document id: `user`, or `agent-` and a digest of the agent object id (ids cannot hold `/`). */
const docId = (scope: StoredScope, agent?: AgentRef) =>
  scope === 'user'
    ? 'user'
    : `agent-${createHash('sha256')
        .update(agent?.objectId.toLowerCase() ?? '')
        .digest('hex')
        .slice(0, 40)}`;

const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim();

/**
 * The append format: a `##` heading (with the reason, when given), a provenance line with the UTC
 * timestamp and the optional reason, operation id and session id, then the content. Entries are separated
 * by a blank line. Stable and plain, so it reads well when the document is handed to a model.
 */
export function appendEntry(
  content: string,
  at: Date,
  p: { reason?: string | undefined; operation_id?: string | undefined; session_id?: string | undefined },
): string {
  const reason = p.reason ? oneLine(p.reason) : undefined;
  const provenance = [
    `Recorded ${at.toISOString()}`,
    ...(reason ? [`reason: ${reason}`] : []),
    ...(p.operation_id ? [`operation: ${oneLine(p.operation_id)}`] : []),
    ...(p.session_id ? [`session: ${oneLine(p.session_id)}`] : []),
  ].join(' · ');
  return `## Memory${reason ? `: ${reason}` : ''}\n_${provenance}_\n\n${content.trim()}\n`;
}

/** The heading an import in append mode puts above the imported markdown. */
export const importEntry = (content: string, at: Date) =>
  `## Imported memory\n_Imported ${at.toISOString()}_\n\n${content.trim()}\n`;

const join = (existing: string, entry: string) =>
  existing.trim() === '' ? entry : `${existing.replace(/\s+$/, '')}\n\n${entry}`;

export class Memories {
  constructor(
    private readonly container: Container<MemoryDoc>,
    private readonly maxBytes: number,
  ) {}

  private async read(upn: string, scope: StoredScope, agent?: AgentRef): Promise<MemoryDoc | undefined> {
    return this.container.read(ownerKey(upn), docId(scope, agent));
  }

  private response(p: Principal, { scope, doc, agent }: Shown): MemoryResponse {
    return {
      scope,
      upn: p.upn,
      user_name: doc?.user_name ?? p.userName,
      name: doc?.name ?? p.name,
      agent_object_id: agent?.objectId ?? null,
      agent_name: agent?.name ?? null,
      content_markdown: doc?.content_markdown ?? '',
      created_on: doc?.created_on ?? null,
      updated_on: doc?.updated_on ?? null,
    };
  }

  async get(p: Principal, scope: Scope, agent?: AgentRef): Promise<MemoryResponse> {
    if (scope !== 'combined') return this.response(p, { scope, doc: await this.read(p.upn, scope, agent), agent });
    const [user, agentDoc] = await Promise.all([
      this.read(p.upn, 'user'),
      agent ? this.read(p.upn, 'agent', agent) : undefined,
    ]);
    const parts = [user?.content_markdown, agentDoc?.content_markdown].filter(
      (t): t is string => t !== undefined && t.trim() !== '',
    );
    const times = [user, agentDoc].filter((d): d is MemoryDoc => d !== undefined);
    return {
      ...this.response(p, { scope: 'combined', doc: user ?? agentDoc, agent }),
      content_markdown: parts.map((t) => t.replace(/\s+$/, '')).join('\n\n'),
      created_on: times.map((d) => d.created_on).sort()[0] ?? null,
      updated_on:
        times
          .map((d) => d.updated_on)
          .sort()
          .at(-1) ?? null,
    };
  }

  /** Changes one document with `edit` (current body -> new body), ETag-safe, refusing oversize results. */
  private async write(
    p: Principal,
    { scope, agent }: MemoryTarget,
    { edit, createIfMissing }: { edit: (body: string, now: Date) => string; createIfMissing: boolean },
  ): Promise<MemoryResponse> {
    const saved = await updateDocument(this.container, { pk: ownerKey(p.upn), id: docId(scope, agent) }, (current) => {
      if (!current && !createIfMissing) return undefined;
      const now = new Date();
      const content = edit(current?.content_markdown ?? '', now);
      if (Buffer.byteLength(content) > this.maxBytes) {
        throw new DomainError(
          'too-large',
          'MemoryTooLarge',
          `The memory document would exceed its limit of ${this.maxBytes} bytes; clear or replace it first`,
        );
      }
      return {
        id: docId(scope, agent),
        pk: ownerKey(p.upn),
        type: 'memory' as const,
        scope,
        upn: p.upn,
        user_name: p.userName,
        name: p.name,
        agent_object_id: agent?.objectId ?? null,
        agent_name: agent?.name ?? null,
        content_markdown: content,
        created_on: current?.created_on ?? now.toISOString(),
        updated_on: now.toISOString(),
      };
    });
    return this.response(p, { scope, doc: saved, agent });
  }

  /** Appends `content` under a heading with its provenance. */
  append(p: Principal, { provenance, content, ...target }: MemoryAppend): Promise<MemoryResponse> {
    const edit = (body: string, now: Date) => join(body, appendEntry(content, now, provenance));
    return this.write(p, target, { edit, createIfMissing: true });
  }

  /** Empties the body and keeps the profile; a missing profile stays missing (and reads as empty). */
  clear(p: Principal, target: MemoryTarget): Promise<MemoryResponse> {
    return this.write(p, target, { edit: () => '', createIfMissing: false });
  }

  /** Imports `content`: under an import heading (append), or in place of the body (replace). */
  import(p: Principal, { mode, content, ...target }: MemoryImport): Promise<MemoryResponse> {
    const edit = (body: string, now: Date) => (mode === 'replace' ? content : join(body, importEntry(content, now)));
    return this.write(p, target, { edit, createIfMissing: true });
  }
}
