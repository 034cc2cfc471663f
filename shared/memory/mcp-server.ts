// The memory tool server as a Model Context Protocol server (streamable HTTP, stateless, JSON
// answers), built with the official SDK: tools get_memory, append_memory and clear_memory. It serves one
// agent, named by its URL (its trusted configuration, never the prompt), for the user its caller forwards in
// X-USER-IDENTITY; only callers with the Memory.ActOnBehalf app role may forward one (the platform's own
// identity). It stores nothing itself: each tool is the memory endpoint's operation for that user.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import type { Principal } from '../auth/principal.js';
import { DomainError } from '../errors.js';
import type { AgentDoc } from '../providers/types/agent.js';
import { VERSION } from '../version.js';
import { answerMcp } from '../http/mcp-http.js';
import { effectiveShielding } from '../providers/types/agent-settings.js';
import { screen, type ShieldingPluginsDeps } from '../shielding/plugins.js';
import type { Memories } from './memory.js';

/** What this module uses of the service (the hosts pass the whole of it): memories, and the shields that read them. */
export interface McpServerDeps extends ShieldingPluginsDeps {
  readonly memories: Memories;
}

const text = (value: unknown) => ({ content: [{ type: 'text' as const, text: JSON.stringify(value) }] });
const failure = (message: string) => ({ content: [{ type: 'text' as const, text: message }], isError: true });

/** Runs a memory operation; its 4xx becomes a tool error the model can read. */
async function tool(run: () => Promise<unknown>) {
  try {
    return text(await run());
  } catch (e) {
    if (e instanceof DomainError && e.callerFault) return failure(`${e.code}: ${e.message}`);
    throw e;
  }
}

/**
 * A memory as the agent's model may read it: what the user wrote there earlier is the user's text, so the
 * agent's pre-completion shields screen it like a prompt; a memory they block is withheld whole.
 */
async function screened<T extends { content_markdown: string }>(
  s: ShieldingPluginsDeps,
  agent: AgentDoc,
  memory: T,
): Promise<T> {
  const shields = effectiveShielding(agent).pre;
  const block =
    shields.length > 0 && memory.content_markdown.trim() !== ''
      ? await screen(s, { plugins: shields, stage: 'pre', text: memory.content_markdown })
      : undefined;
  // The shield's reason stays out: it may quote what it matched, which the model is not to read.
  if (block)
    throw new DomainError('forbidden', 'MemoryWithheld', `The memory is withheld: ${block.plugin_name} blocked it`);
  return memory;
}

export function memoryServer(s: McpServerDeps, user: Principal, agent: AgentDoc): McpServer {
  const server = new McpServer({ name: 'agent-platform-memory', version: VERSION });
  const ref = { objectId: agent.object_id, name: agent.name };
  server.registerTool(
    'get_memory',
    {
      description:
        'Reads what is remembered about the user (scope user), for this agent (agent), or both (combined, the ' +
        'default).',
      inputSchema: { scope: z.enum(['user', 'agent', 'combined']).optional() },
    },
    ({ scope }) =>
      tool(async () =>
        screened(s, agent, await s.memories.get(user, scope ?? 'combined', scope === 'user' ? undefined : ref)),
      ),
  );
  server.registerTool(
    'append_memory',
    {
      description:
        'Remembers something for later conversations: markdown appended to the user memory (scope user) or to ' +
        "this agent's memory of the user (agent).",
      inputSchema: {
        scope: z.enum(['user', 'agent']),
        memory: z.string().min(1).max(16_000),
        reason: z.string().max(500).optional(),
      },
    },
    ({ scope, memory, reason }) =>
      tool(() =>
        s.memories.append(user, {
          scope,
          agent: scope === 'agent' ? ref : undefined,
          content: memory,
          provenance: reason ? { reason } : {},
        }),
      ),
  );
  server.registerTool(
    'clear_memory',
    {
      description: 'Forgets everything in one scope; only when the user asked for it, with confirm true.',
      inputSchema: { scope: z.enum(['user', 'agent']), confirm: z.boolean() },
    },
    ({ scope, confirm }) =>
      confirm
        ? tool(() => s.memories.clear(user, { scope, agent: scope === 'agent' ? ref : undefined }))
        : Promise.resolve(failure('ValidationError: confirm must be true to clear memory')),
  );
  return server;
}

/** Answers one JSON-RPC message of the streamable HTTP transport (stateless, JSON responses). */
export const handleMemoryMcp = (
  s: McpServerDeps,
  { user, agent, url, body }: { user: Principal; agent: AgentDoc; url: string; body: unknown },
) => answerMcp(memoryServer(s, user, agent), url, body);
