// Personalized memory endpoints: read, append, clear, export, import. Every operation acts on the
// authenticated (or forwarded) user's own memory.
import { z } from 'zod';
import type { Principal } from '../shared/auth/principal.js';
import { validationError } from '../shared/errors.js';
import { defineRoute } from '../shared/http/route.js';
import { InstanceParams } from '../shared/schemas.js';
import { json } from '../shared/http/types.js';
import { MemoryResponse, Scope, StoredScope, type AgentRef } from '../shared/memory/memory.js';
import { actingPrincipal } from '../shared/memory/on-behalf.js';
import { agentForUse } from '../shared/providers/agent-access.js';
import type { Authorizer } from '../shared/auth/authorizer.js';
import type { UpnBindings } from '../shared/auth/upn-bindings.js';
import type { Config } from '../shared/config.js';
import type { Memories } from '../shared/memory/memory.js';
import type { ResourceCache } from '../shared/providers/resource-cache.js';
import type { DocumentStore } from '../shared/store/types.js';

/** What this module uses of the service (the hosts pass the whole of it). */
export interface MemoryRoutesDeps {
  readonly authorizer: Authorizer;
  readonly config: Config;
  readonly memories: Memories;
  readonly resourceCache: ResourceCache;
  readonly store: DocumentStore;
  readonly upnBindings: UpnBindings;
}

const Content = z
  .string({ error: 'content_markdown is required' })
  .refine((v) => v.trim().length > 0, 'content_markdown must contain non-whitespace text');

const AppendBody = z
  .object({
    scope: StoredScope,
    agent_object_id: z.string().min(1).optional(),
    agent_name: z.string().optional(),
    content_markdown: Content,
    reason: z.string().max(500).optional(),
    operation_id: z.string().max(100).optional(),
    session_id: z.string().max(100).optional(),
  })
  .strict();
const ClearBody = z
  .object({
    scope: StoredScope,
    agent_object_id: z.string().min(1).optional(),
    confirm: z.literal(true, { error: 'confirm must be true' }),
  })
  .strict();
const ImportBody = z
  .object({
    scope: StoredScope,
    agent_object_id: z.string().min(1).optional(),
    content_markdown: Content,
    mode: z.enum(['append', 'replace'], { error: 'mode must be append or replace' }).default('append'),
  })
  .strict();

/**
 * The agent of an agent-scoped call: its object id must name an agent of this instance that the acting
 * user may use (the agent provider's 403 or 404 otherwise). Combined reads include it only when given.
 */
async function agentOf(
  s: MemoryRoutesDeps,
  p: Principal,
  { scope, objectId }: { scope: Scope; objectId: string | undefined },
): Promise<AgentRef | undefined> {
  if (scope === 'user') return undefined;
  if (objectId === undefined) {
    if (scope === 'agent')
      throw validationError([{ field: 'agent_object_id', message: 'agent_object_id is required when scope is agent' }]);
    return undefined;
  }
  const prefix = `/instances/${s.config.instanceId}/providers/Svc.Agent/agents/`;
  if (!objectId.toLowerCase().startsWith(prefix.toLowerCase()) || objectId.length === prefix.length) {
    throw validationError([
      { field: 'agent_object_id', message: `agent_object_id must be an agent object id (${prefix}{name})` },
    ]);
  }
  const agent = await agentForUse(s, p, objectId.slice(prefix.length));
  return { objectId: agent.object_id, name: agent.name };
}

const common = { api: 'core', tag: 'Memory', auth: 'any', errors: 'core', params: InstanceParams } as const;
const ok = { 200: { description: 'The memory', schema: MemoryResponse } };

export const routes = [
  defineRoute({
    ...common,
    name: 'memory-get',
    method: 'GET',
    path: '/instances/{instanceId}/memory',
    summary: 'Read memory: user, agent, or both combined (default); empty memory is 200',
    query: z.object({ scope: Scope.default('combined'), agentObjectId: z.string().optional() }),
    responses: ok,
    handler: async ({ services, principal, request, query }) => {
      const p = await actingPrincipal(principal, request, services.upnBindings);
      return json(
        200,
        await services.memories.get(
          p,
          query.scope,
          await agentOf(services, p, { scope: query.scope, objectId: query.agentObjectId }),
        ),
      );
    },
  }),
  defineRoute({
    ...common,
    name: 'memory-append',
    method: 'POST',
    path: '/instances/{instanceId}/memory/append',
    summary: 'Append markdown under an automatic heading with provenance',
    body: AppendBody,
    responses: { ...ok, 413: { description: 'The document would exceed MEMORY_MAX_BYTES' } },
    handler: async ({ services, principal, request, body }) => {
      const p = await actingPrincipal(principal, request, services.upnBindings);
      const agent = await agentOf(services, p, { scope: body.scope, objectId: body.agent_object_id });
      const provenance = { reason: body.reason, operation_id: body.operation_id, session_id: body.session_id };
      return json(
        200,
        await services.memories.append(p, { scope: body.scope, agent, content: body.content_markdown, provenance }),
      );
    },
  }),
  defineRoute({
    ...common,
    name: 'memory-clear',
    method: 'POST',
    path: '/instances/{instanceId}/memory/clear',
    summary: 'Empty the memory body, keeping the profile (confirm must be true)',
    body: ClearBody,
    responses: ok,
    handler: async ({ services, principal, request, body }) => {
      const p = await actingPrincipal(principal, request, services.upnBindings);
      return json(
        200,
        await services.memories.clear(p, {
          scope: body.scope,
          agent: await agentOf(services, p, { scope: body.scope, objectId: body.agent_object_id }),
        }),
      );
    },
  }),
  defineRoute({
    ...common,
    name: 'memory-export',
    method: 'GET',
    path: '/instances/{instanceId}/memory/export',
    summary: 'The raw markdown of a memory (text/markdown)',
    query: z.object({ scope: Scope, agentObjectId: z.string().optional() }),
    responses: { 200: { description: 'Raw markdown', schema: z.string(), contentType: 'text/markdown' } },
    handler: async ({ services, principal, request, query }) => {
      const p = await actingPrincipal(principal, request, services.upnBindings);
      const memory = await services.memories.get(
        p,
        query.scope,
        await agentOf(services, p, { scope: query.scope, objectId: query.agentObjectId }),
      );
      return { status: 200, headers: { 'content-type': 'text/markdown; charset=utf-8' }, raw: memory.content_markdown };
    },
  }),
  defineRoute({
    ...common,
    name: 'memory-import',
    method: 'POST',
    path: '/instances/{instanceId}/memory/import',
    summary: 'Import markdown: append under an import heading (default) or replace the body',
    body: ImportBody,
    responses: { ...ok, 413: { description: 'The document would exceed MEMORY_MAX_BYTES' } },
    handler: async ({ services, principal, request, body }) => {
      const p = await actingPrincipal(principal, request, services.upnBindings);
      const agent = await agentOf(services, p, { scope: body.scope, objectId: body.agent_object_id });
      const { scope, content_markdown: content, mode } = body;
      return json(200, await services.memories.import(p, { scope, agent, content, mode }));
    },
  }),
];
