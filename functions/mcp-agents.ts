// The agents as an MCP server (streamable HTTP): POST /instances/{instanceId}/mcp/agents, one tool per agent
// the caller may use (docs/protocols.md). Bearer identity-provider tokens or an agent access token.
import { z } from 'zod';
import { defineRoute } from '../shared/http/route.js';
import { InstanceParams } from '../shared/schemas.js';
import { mcpReply } from '../shared/http/mcp-http.js';

export const routes = [
  defineRoute({
    api: 'core',
    tag: 'MCP',
    auth: 'protocol',
    errors: 'core',
    traceBoundary: true,
    name: 'mcp-agents',
    method: 'POST',
    path: '/instances/{instanceId}/mcp/agents',
    summary:
      'The agents as an MCP server (streamable HTTP, JSON answers): one tool per agent the caller may use, ' +
      'input {prompt, session_id?}, answering with the completion text',
    params: InstanceParams,
    body: z.record(z.string(), z.unknown()).describe('A JSON-RPC message of the Model Context Protocol'),
    responses: {
      200: { description: 'The JSON-RPC answer', schema: z.record(z.string(), z.unknown()) },
      202: { description: 'A notification was accepted' },
    },
    handler: async ({ services, principal, params, body }) => {
      // The MCP SDK is loaded by the first call, not at start-up.
      const { handleAgentsMcp } = await import('../shared/protocols/mcp-agents.js');
      const answer = await handleAgentsMcp(services, principal, {
        url: `http://localhost/instances/${params.instanceId}/mcp/agents`,
        body,
      });
      return mcpReply(answer);
    },
  }),
];
