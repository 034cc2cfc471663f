// One JSON-RPC message of MCP's streamable HTTP transport answered by a server built for that request
// (stateless: no session id, JSON answers), with the official SDK's transport.
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import * as streamableHttp from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { relayed, type RelayedReply } from './answers.js';

/** What the SDK's transport answered one message. */
export interface McpAnswer {
  status: number;
  body: string;
  contentType: string | null;
}

/** An MCP answer as a route's reply: the transport decided its status and body (an empty body: none). */
export const mcpReply = ({ status, body, contentType }: McpAnswer): RelayedReply =>
  body.length === 0
    ? relayed({ status })
    : relayed({ status, headers: { 'content-type': contentType ?? 'application/json' }, raw: body });

export async function answerMcp(server: McpServer, url: string, body: unknown): Promise<McpAnswer> {
  const transport = new streamableHttp.WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  try {
    await server.connect(transport);
    const request = new Request(url, {
      method: 'POST',
      headers: { accept: 'application/json, text/event-stream', 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const response = await transport.handleRequest(request, { parsedBody: body });
    return { status: response.status, body: await response.text(), contentType: response.headers.get('content-type') };
  } finally {
    await transport.close();
    await server.close();
  }
}
