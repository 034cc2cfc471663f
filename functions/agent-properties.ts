// Agent property actions: get-properties and set-properties, answering problem details on error. The route
// authorizes read (get) or write (set) on the agent.
import { z } from 'zod';
import {
  GetPropertiesBody,
  getProperties,
  SetPropertiesBody,
  setProperties,
} from '../shared/registry/agent-properties.js';
import { objectIdOf, ResourceName } from '../shared/providers/types/resource-type.js';
import { agents } from '../shared/providers/types/agent.js';
import { defineRoute } from '../shared/http/route.js';
import { json } from '../shared/http/types.js';

const Params = z.object({ instanceId: z.string(), agentName: ResourceName });
const base = '/instances/{instanceId}/providers/Svc.Agent/agents/{agentName}';
const common = {
  api: 'management',
  tag: 'Svc.Agent/agents',
  auth: 'bearer',
  errors: 'problem',
  params: Params,
} as const;
const onAgent =
  (verb: 'read' | 'write') =>
  ({ params }: { params: z.output<typeof Params> }) => ({
    action: `Svc.Agent/agents/${verb}`,
    scope: objectIdOf(params.instanceId, agents, params.agentName),
  });

export const routes = [
  defineRoute({
    ...common,
    name: 'agents-get-properties',
    method: 'POST',
    path: `${base}/get-properties`,
    summary: 'Read named properties and metadata properties of an agent',
    body: GetPropertiesBody,
    permission: onAgent('read'),
    responses: {
      200: {
        description: 'Action result with the values',
        schema: z.object({
          object_id: z.string(),
          is_success: z.boolean(),
          resource: z.object({
            properties: z.record(z.string(), z.unknown()),
            metadata_properties: z.record(z.string(), z.unknown()),
          }),
        }),
      },
    },
    handler: async ({ services, params, body }) => json(200, await getProperties(services, params.agentName, body)),
  }),
  defineRoute({
    ...common,
    name: 'agents-set-properties',
    method: 'POST',
    path: `${base}/set-properties`,
    summary: 'Write properties and metadata properties of an agent; updated_on and updated_by are set by the service',
    body: SetPropertiesBody,
    permission: onAgent('write'),
    responses: {
      200: { description: 'Action result', schema: z.object({ object_id: z.string(), is_success: z.boolean() }) },
    },
    handler: async ({ services, principal, params, body }) =>
      json(200, await setProperties(services, principal, { agentName: params.agentName, body })),
  }),
];
