// create-agent: a new agent and its resources from an agent template (the templates themselves are resources
// served by functions/resources.ts, built-in ones beside stored ones).
import { z } from 'zod';
import { createAgent } from '../shared/artifacts/templates.js';
import { defineRoute } from '../shared/http/route.js';
import { InstanceParams } from '../shared/schemas.js';
import { json } from '../shared/http/types.js';
import { ResourceName } from '../shared/providers/types/resource-type.js';

export const routes = [
  defineRoute({
    api: 'management',
    tag: 'Svc.Agent/agentTemplates',
    auth: 'bearer',
    errors: 'management',
    name: 'agent-templates-create-agent',
    method: 'POST',
    path: '/instances/{instanceId}/providers/Svc.Agent/agentTemplates/{name}/create-agent',
    summary:
      'Create every resource of a template with the parameters given (agent_name among them); the caller ' +
      "becomes the new agent's Owner",
    params: InstanceParams.extend({ name: ResourceName }),
    body: z.object({ parameters: z.record(z.string(), z.unknown()) }).strict(),
    permission: ({ params }) => ({
      action: 'Svc.Agent/agentTemplates/read',
      scope: `/instances/${params.instanceId}/providers/Svc.Agent/agentTemplates/${params.name}`,
    }),
    responses: {
      201: {
        description: 'The object ids of the resources created, the agent among them',
        schema: z.object({ object_ids: z.array(z.string()) }),
      },
      400: {
        description:
          'A parameter is missing or not of its declared type, or a resource is refused: nothing was created',
      },
      409: { description: 'A resource the template creates exists already: nothing was created' },
    },
    handler: async ({ services, principal, params, body }) =>
      json(201, await createAgent(services, principal, { template: params.name, parameters: body.parameters })),
  }),
];
