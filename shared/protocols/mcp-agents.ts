// The agents as a Model Context Protocol server (streamable HTTP, stateless, JSON answers), built with the
// official SDK: one tool per agent the caller may use, named as the agent, taking `{prompt, session_id?}` and
// answering with the completion's text and its citations as resource links. Each call is a completion of the
// pipeline (quotas, shielding, retrieval, tools, usage), recorded with the protocol `mcp`.
import type { CompletionDeps } from '../completions/completion-deps.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { Principal } from '../auth/principal.js';
import { DomainError } from '../errors.js';
import { UpstreamError } from '../models/upstream-errors.js';
import { usableAgents } from '../providers/agent-access.js';
import type { AgentDoc } from '../providers/types/agent.js';
import { withCorrelation } from '../telemetry/correlation.js';
import { VERSION } from '../version.js';
import { releasing, reserve } from '../completions/admission.js';
import { newOperationId, runCompletion } from '../completions/completion.js';
import { isWebPage } from '../knowledge/retrieval.js';
import { answerMcp } from '../http/mcp-http.js';

/** What this module uses of the service (the hosts pass the whole of it). */
export type McpAgentsDeps = CompletionDeps;

/** MCP's tool names: letters, digits, `_`, `-` and `.`, at most 128 (an agent whose name is not one has no tool). */
const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

const failure = (message: string): CallToolResult => ({ content: [{ type: 'text', text: message }], isError: true });

/** A question to an agent, in a session of the caller's or a new one, while the caller still waits (its signal). */
interface Question {
  agent: AgentDoc;
  prompt: string;
  sessionId: string | undefined;
  signal: AbortSignal;
}

/** One agent's answer as a tool result: the text, then each cited web page as a resource link. */
async function ask(
  s: McpAgentsDeps,
  user: Principal,
  { agent, prompt, sessionId, signal }: Question,
): Promise<CallToolResult> {
  const operationId = newOperationId();
  return withCorrelation(
    { operationId, instanceId: s.config.instanceId, conversationId: sessionId, protocol: 'mcp' },
    user.upn,
    async () => {
      try {
        const { request, reservation } = await reserve(
          s,
          user,
          { user_prompt: prompt, agent_name: agent.name, ...(sessionId ? { session_id: sessionId } : {}) },
          { facade: { protocol: 'mcp' } },
        );
        const answer = await releasing(
          s,
          reservation,
          runCompletion(s, user, request, { operationId, mayRepeat: false, signal }),
        );
        const links = answer.citations.filter(isWebPage).map((c) => ({
          type: 'resource_link' as const,
          uri: c.source,
          name: c.title || c.source,
          description: c.text.slice(0, 200),
        }));
        return { content: [{ type: 'text', text: answer.completion }, ...links], _meta: { operation_id: operationId } };
      } catch (e) {
        // What the caller or the model got wrong is the tool's answer, for the calling model to read.
        if (e instanceof DomainError && (e.callerFault || e.kind === 'rate-limited'))
          return failure(`${e.code}: ${e.message}`);
        if (e instanceof UpstreamError || e instanceof DomainError)
          return failure(`The agent could not answer: ${e.message}`);
        throw e;
      }
    },
  );
}

export async function agentsServer(s: McpAgentsDeps, user: Principal): Promise<McpServer> {
  const server = new McpServer({ name: 'agent-platform-agents', version: VERSION });
  for (const { agent } of await usableAgents(s, user)) {
    if (!TOOL_NAME.test(agent.name)) continue;
    server.registerTool(
      agent.name,
      {
        title: agent.display_name ?? agent.name,
        description: agent.description ?? `Ask the agent ${agent.display_name ?? agent.name}`,
        inputSchema: {
          prompt: z.string().min(1).max(100_000).describe('What to ask the agent'),
          session_id: z.uuid().optional().describe("One of the caller's sessions, to continue that conversation"),
        },
      },
      ({ prompt, session_id: sessionId }, extra) => ask(s, user, { agent, prompt, sessionId, signal: extra.signal }),
    );
  }
  return server;
}

/** Answers one JSON-RPC message for the caller. */
export const handleAgentsMcp = async (
  s: McpAgentsDeps,
  user: Principal,
  { url, body }: { url: string; body: unknown },
) => answerMcp(await agentsServer(s, user), url, body);
