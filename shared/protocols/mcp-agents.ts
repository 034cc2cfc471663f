// The agents as a Model Context Protocol server (streamable HTTP, stateless, JSON answers), built with the
// official SDK: one tool per agent the caller may use, named as the agent, taking `{prompt, session_id?}` and
// answering with the completion's text and its citations as resource links. Each call is a completion of the
// pipeline (quotas, shielding, retrieval, tools, usage), recorded with the protocol `mcp`.
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
import type { Authorizer } from '../auth/authorizer.js';
import type { PrincipalDirectory } from '../auth/directory.js';
import type { Budgets } from '../completions/budgets.js';
import type { Quotas } from '../completions/quotas.js';
import type { Config } from '../config.js';
import type { Conversations } from '../conversations/conversations.js';
import type { SessionTurns } from '../conversations/turns.js';
import type { Files } from '../files/files.js';
import type { ExtractionPool } from '../knowledge/extract-pool.js';
import type { VectorIndex } from '../knowledge/vector-index.js';
import type { Log } from '../log.js';
import type { Memories } from '../memory/memory.js';
import type { ModelCredentials } from '../models/credentials.js';
import type { ModelGateway } from '../models/gateway.js';
import type { Dispatcher } from '../net/undici.js';
import type { PluginRuntime } from '../plugins/runtime.js';
import type { ResourceCache } from '../providers/resource-cache.js';
import type { AppSettings } from '../providers/settings.js';
import type { DocumentStore } from '../store/types.js';

/** What this module uses of the service (the hosts pass the whole of it). */
export interface McpAgentsDeps {
  readonly authorizer: Authorizer;
  readonly budgets: Budgets;
  readonly config: Config;
  readonly conversations: Conversations;
  readonly credentials: ModelCredentials;
  readonly directory: PrincipalDirectory;
  readonly extraction: ExtractionPool;
  readonly files: Files;
  readonly log: Log;
  readonly memories: Memories;
  readonly models: ModelGateway;
  readonly plugins: PluginRuntime;
  readonly quotas: Quotas;
  readonly resourceCache: ResourceCache;
  readonly settings: AppSettings;
  readonly store: DocumentStore;
  readonly turns: SessionTurns;
  readonly userDispatcher: Dispatcher;
  readonly vectors: VectorIndex;
}

/** MCP's tool names: letters, digits, `_`, `-` and `.`, at most 128 (an agent whose name is not one has no tool). */
const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

const failure = (message: string): CallToolResult => ({ content: [{ type: 'text', text: message }], isError: true });

/** One agent's answer as a tool result: the text, then each cited web page as a resource link. */
async function ask(
  s: McpAgentsDeps,
  user: Principal,
  agent: AgentDoc,
  prompt: string,
  sessionId: string | undefined,
  signal: AbortSignal,
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
          { protocol: 'mcp' },
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
      ({ prompt, session_id: sessionId }, extra) => ask(s, user, agent, prompt, sessionId, extra.signal),
    );
  }
  return server;
}

/** Answers one JSON-RPC message for the caller. */
export const handleAgentsMcp = async (s: McpAgentsDeps, user: Principal, url: string, body: unknown) =>
  answerMcp(await agentsServer(s, user), url, body);
