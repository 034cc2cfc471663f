// The agents the caller may use: by role assignment, or the one agent of a token.
import { z } from 'zod';
import { defineRoute } from '../shared/http/route.js';
import { InstanceParams } from '../shared/schemas.js';
import { json } from '../shared/http/types.js';
import { usableAgents } from '../shared/providers/agent-access.js';

const AgentListItem = z
  .object({
    resource: z.object({
      type: z.literal('agent'),
      name: z.string(),
      object_id: z.string(),
      display_name: z.string(),
      description: z.string(),
    }),
    roles: z.array(z.string()),
    actions: z.array(z.string()),
  })
  .meta({ id: 'AgentListItem' });
type AgentListItem = z.output<typeof AgentListItem>;

export const routes = [
  defineRoute({
    name: 'completions-agents',
    api: 'core',
    method: 'GET',
    path: '/instances/{instanceId}/completions/agents',
    summary: 'Agents the caller may use',
    tag: 'Completions',
    auth: 'any',
    errors: 'core',
    params: InstanceParams,
    responses: { 200: { description: 'Agents', schema: z.array(AgentListItem) } },
    handler: async ({ services, principal }) =>
      json(
        200,
        (await usableAgents(services, principal)).map(({ agent, access }): AgentListItem => ({
          resource: {
            type: 'agent',
            name: agent.name,
            object_id: agent.object_id,
            display_name: agent.display_name ?? agent.name,
            description: agent.description ?? '',
          },
          ...access,
        })),
      ),
  }),
];
