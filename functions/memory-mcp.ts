// The memory tool server (an MCP server over streamable HTTP), one URL per agent:
// POST /instances/{instanceId}/mcp/memory/{agentName}. Its caller forwards the signed-in user in
// X-USER-IDENTITY and must hold the Memory.ActOnBehalf app role; the user must be able to use the agent.
import { z } from 'zod';
import { badRequest } from '../shared/errors.js';
import { defineRoute } from '../shared/http/route.js';
import { mcpReply } from '../shared/http/mcp-http.js';
import { actingPrincipal, USER_IDENTITY_HEADER } from '../shared/memory/on-behalf.js';
import { agentForUse } from '../shared/providers/agent-access.js';
import { ResourceName } from '../shared/providers/types/resource-type.js';

export const routes = [
  defineRoute({
    api: 'core',
    tag: 'Memory',
    auth: 'bearer',
    errors: 'core',
    name: 'memory-mcp',
    method: 'POST',
    path: '/instances/{instanceId}/mcp/memory/{agentName}',
    summary:
      'The memory tool server (MCP, streamable HTTP, JSON answers): get_memory, append_memory, clear_memory ' +
      'for the forwarded user and this agent',
    params: z.object({ instanceId: z.string(), agentName: ResourceName }),
    body: z.record(z.string(), z.unknown()).describe('A JSON-RPC message of the Model Context Protocol'),
    responses: {
      200: { description: 'The JSON-RPC answer', schema: z.record(z.string(), z.unknown()) },
      202: { description: 'A notification was accepted' },
    },
    handler: async ({ services, principal, request, params, body }) => {
      if (request.header(USER_IDENTITY_HEADER) === undefined)
        throw badRequest('X-USER-IDENTITY is required: the tool server acts for a signed-in user');
      const user = await actingPrincipal(principal, request, services.upnBindings);
      const agent = await agentForUse(services, user, params.agentName);
      // The MCP SDK is loaded by the first call, not at start-up.
      const { handleMemoryMcp } = await import('../shared/memory/mcp-server.js');
      const answer = await handleMemoryMcp(services, {
        user,
        agent,
        url: `http://localhost/instances/${params.instanceId}/mcp/memory/${params.agentName}`,
        body,
      });
      return mcpReply(answer);
    },
  }),
];
