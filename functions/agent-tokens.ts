// Agent access tokens: issue, list, validate, deactivate and activate, and revoke, per agent.
import { z } from 'zod';
import type { Principal } from '../shared/auth/principal.js';
import { view } from '../shared/auth/agent-tokens.js';
import { notFound } from '../shared/errors.js';
import { defineRoute } from '../shared/http/route.js';
import { GUID } from '../shared/schemas.js';
import { pagedJson, pagedResponse, PageQuery } from '../shared/http/paging.js';
import { json } from '../shared/http/types.js';
import {
  objectIdOf,
  partitionOf,
  resourceId,
  ResourceName,
  resourcesOf,
} from '../shared/providers/types/resource-type.js';
import { agents, type AgentDoc } from '../shared/providers/types/agent.js';
import type { AgentTokens } from '../shared/auth/agent-tokens.js';
import type { Pager } from '../shared/http/paging.js';
import type { DocumentStore } from '../shared/store/types.js';

/** What this module uses of the service (the hosts pass the whole of it). */
export interface AgentTokensRoutesDeps {
  readonly agentTokens: AgentTokens;
  readonly pager: Pager;
  readonly store: DocumentStore;
}

const Params = z.object({ instanceId: z.string(), agentName: ResourceName });
const base = '/instances/{instanceId}/providers/Svc.Agent/agents/{agentName}/agent-access-tokens';
const common = { api: 'management', tag: 'Agent access tokens', auth: 'bearer', errors: 'management' } as const;
const permission =
  (verb: 'read' | 'write' | 'delete' | 'validate') =>
  ({ params }: { params: { instanceId: string; agentName: string } }) => ({
    action: `Svc.Agent/agents/agentAccessTokens/${verb}`,
    scope: objectIdOf(params.instanceId, agents, params.agentName),
  });

const CreateBody = z
  .object({
    type: z.literal('agent-access-token', { error: 'type must be agent-access-token' }),
    name: z.string({ error: 'name is required' }).trim().min(1, 'name is required').max(200),
    description: z.string().max(2000).optional(),
    expiration_date: z.iso
      .datetime({ offset: true, error: 'expiration_date must be an ISO 8601 date-time' })
      .optional(),
  })
  .strict();

const TokenView = z
  .object({
    type: z.literal('agent-access-token'),
    name: z.string(),
    object_id: z.string(),
    id: z.string(),
    active: z.boolean(),
    description: z.string().nullable(),
    expiration_date: z.string().nullable(),
    last_used_on: z
      .string()
      .nullable()
      .describe('When a request last authenticated with it (to the minute); null when never'),
  })
  .meta({ id: 'AgentAccessToken' });

async function liveAgent(services: AgentTokensRoutesDeps, name: string): Promise<AgentDoc> {
  const agent = await resourcesOf(services.store, agents).read(partitionOf(agents), resourceId(name));
  if (!agent || agent.deleted) throw notFound(`Agent ${name} not found`);
  return agent;
}

const upnOf = (p: Principal) => p.upn;
const TokenParams = Params.extend({ tokenId: z.string().regex(GUID, 'tokenId must be a GUID') });

export const routes = [
  defineRoute({
    ...common,
    name: 'agent-tokens-create',
    method: 'POST',
    path: base,
    summary: 'Issue an agent access token; the token value is in `resource`, shown this once only',
    params: Params,
    body: CreateBody,
    permission: permission('write'),
    responses: {
      200: {
        description: 'Created; `resource` is the full token string',
        schema: z.object({
          object_id: z.string(),
          resource_object_id: z.null(),
          is_success: z.boolean(),
          resource: z.string(),
        }),
      },
    },
    handler: async ({ services, params, body, principal }) => {
      const agent = await liveAgent(services, params.agentName);
      const { doc, token } = await services.agentTokens.create(
        {
          name: agent.name,
          object_id: agent.object_id,
          virtual_security_group_id: String(agent.virtual_security_group_id),
        },
        body,
        upnOf(principal),
      );
      return json(200, { object_id: doc.object_id, resource_object_id: null, is_success: true, resource: token });
    },
  }),
  defineRoute({
    ...common,
    name: 'agent-tokens-list',
    method: 'GET',
    path: base,
    summary: 'List the tokens of an agent (never their secrets)',
    params: Params,
    query: PageQuery,
    permission: permission('read'),
    responses: { 200: pagedResponse('Tokens', z.object({ resource: TokenView })) },
    handler: async ({ services, principal, params, query }) => {
      await liveAgent(services, params.agentName);
      const list = `agent-tokens\n${params.agentName.toLowerCase()}`;
      return pagedJson(
        await services.pager.page(principal, {
          list,
          query,
          fetch: (c, n) => services.agentTokens.list(params.agentName, c, n),
        }),
        (d) => ({ resource: view(d) }),
      );
    },
  }),
  defineRoute({
    ...common,
    name: 'agent-tokens-validate',
    method: 'POST',
    path: `${base}/validate`,
    summary: 'Check a token of this agent; the virtual identity is returned only when it is valid',
    params: Params,
    body: z
      .object({ access_token: z.string({ error: 'access_token is required' }).min(1, 'access_token is required') })
      .strict(),
    permission: permission('validate'),
    responses: {
      200: {
        description: 'Validation result',
        schema: z.object({
          valid: z.boolean(),
          virtual_identity: z
            .object({ user_id: z.string(), name: z.string(), upn: z.string(), group_ids: z.array(z.string()) })
            .optional(),
        }),
      },
    },
    handler: async ({ services, params, body }) => {
      await liveAgent(services, params.agentName);
      const result = await services.agentTokens.check(body.access_token);
      // A valid token of another agent is not valid for this one.
      if (!result.ok || resourceId(result.doc.agent_name) !== resourceId(params.agentName))
        return json(200, { valid: false });
      return json(200, { valid: true, virtual_identity: services.agentTokens.identity(result.doc) });
    },
  }),
  ...(['activate', 'deactivate'] as const).map((verb) =>
    defineRoute({
      ...common,
      name: `agent-tokens-${verb}`,
      method: 'POST',
      path: `${base}/{tokenId}/${verb}`,
      summary:
        verb === 'activate'
          ? 'Let a deactivated token authenticate again'
          : 'Switch a token off without deleting it: refused at once here, within 30 s on every instance',
      params: TokenParams,
      permission: permission('write'),
      responses: { 200: { description: 'The token', schema: z.object({ resource: TokenView }) } },
      handler: async ({ services, params }) => {
        await liveAgent(services, params.agentName);
        return json(200, {
          resource: view(await services.agentTokens.setActive(params.agentName, params.tokenId, verb === 'activate')),
        });
      },
    }),
  ),
  defineRoute({
    ...common,
    name: 'agent-tokens-delete',
    method: 'DELETE',
    path: `${base}/{tokenId}`,
    summary: 'Revoke a token: requests with it fail at once',
    params: TokenParams,
    permission: permission('delete'),
    responses: { 204: { description: 'Deleted' } },
    handler: async ({ services, params }) => {
      await services.agentTokens.delete(params.agentName, params.tokenId.toLowerCase());
      return { status: 204 };
    },
  }),
];
