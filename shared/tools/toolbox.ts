// The functions an agent offers its model for one completion: each mcp tool's allow-listed server tools, each on-demand
// knowledge index as a search function, each plugin tool, and the code interpreter's `python`. Names are what the model
// calls (`{tool}__{function}`, 64 characters at most); running one returns text for the model, never throws for the
// model's mistakes.
import { createHash } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Principal } from '../auth/principal.js';
import type { EmbeddingSpend } from '../knowledge/embedder.js';
import {
  aboveMinimum,
  citationOf,
  knowledgeTool,
  PromptEmbeddings,
  searchIndex,
  type Citation,
  type KnowledgeScope,
} from '../knowledge/retrieval.js';
import type { ToolDefinition } from '../models/wire.js';
import type { AgentDoc } from '../providers/types/agent.js';
import type { ToolDoc } from '../providers/types/catalog.js';
import { connectMcp, mcpTools, resultText, type McpTool } from './mcp.js';
import { codeInterpreterFunction, pluginFunction, type FileArtifact } from './sandboxed.js';
import type { FileDoc } from '../files/files.js';
import type { Files } from '../files/files.js';
import type { VectorIndex } from '../knowledge/vector-index.js';
import type { Log } from '../log.js';
import type { Memories } from '../memory/memory.js';
import type { ModelCredentials } from '../models/credentials.js';
import type { ModelGateway } from '../models/gateway.js';
import type { Dispatcher } from '../net/undici.js';
import type { PluginRuntime } from '../plugins/runtime.js';
import type { ResourceCache } from '../providers/resource-cache.js';
import type { AppSettings } from '../providers/settings.js';

/** What this module uses of the service (the hosts pass the whole of it). */
export interface ToolboxDeps {
  readonly credentials: ModelCredentials;
  readonly files: Files;
  readonly log: Log;
  readonly memories: Memories;
  readonly models: ModelGateway;
  readonly plugins: PluginRuntime;
  readonly resourceCache: ResourceCache;
  readonly settings: AppSettings;
  readonly userDispatcher: Dispatcher;
  readonly vectors: VectorIndex;
}

export interface AgentFunction {
  definition: ToolDefinition;
  /** The tool resource it belongs to (analytics count tools by this name). */
  tool: string;
  run(args: Record<string, unknown>, signal: AbortSignal): Promise<{ text: string; isError: boolean }>;
}

export interface Toolbox {
  functions: AgentFunction[];
  /** Partitions on-demand searches found, for the answer's citations. */
  citations: Citation[];
  /** Files the code interpreter wrote, for the answer's content artifacts. */
  artifacts: FileArtifact[];
  close(): Promise<void>;
}

/** A function name the model accepts, unique and stable for the same tool and function. */
function functionName(tool: string, fn: string): string {
  const name = `${tool}__${fn}`.replace(/[^A-Za-z0-9_-]/g, '_');
  return name.length <= 64
    ? name
    : `${name.slice(0, 55)}_${createHash('sha256').update(name).digest('hex').slice(0, 8)}`;
}

/** What the toolbox's functions work with besides the agent: the caller's session and attachments. */
export interface ToolContext {
  user: Principal;
  sessionId: string | undefined;
  attachments: readonly FileDoc[];
  /** The caller's knowledge scope: the request's filter and the groups they read as. */
  scope: KnowledgeScope;
  /** Where the searches' embeddings add their cost, for the completion. */
  spend?: EmbeddingSpend;
}

/** The functions an agent's tools offer the model in one turn, and what they gather for the answer. */
export async function toolboxFor(
  s: ToolboxDeps,
  context: ToolContext,
  { agent, tools }: { agent: AgentDoc; tools: readonly ToolDoc[] },
): Promise<Toolbox> {
  const { user, scope } = context;
  const clients: Client[] = [];
  // The servers' connections live as long as the turn: closing the toolbox closes the connected ones and
  // aborts any still connecting (a server that never answers). Made with the first connection: an abort
  // makes an exception with its stack, which a turn without MCP servers need not pay for.
  let lifetime: AbortController | undefined;
  const citations: Citation[] = [];
  const artifacts: FileArtifact[] = [];
  const functions: AgentFunction[] = [];
  const listings: Promise<{ tool: ToolDoc; offered: McpTool[]; connected: () => Promise<Client> }>[] = [];
  for (const tool of tools) {
    const knowledge = knowledgeTool(tool);
    if (knowledge?.retrieval === 'on_demand') {
      const { index, topN } = knowledge;
      functions.push({
        tool: tool.name,
        definition: {
          type: 'function',
          function: {
            name: functionName(tool.name, 'search'),
            description:
              `Searches the ${index} knowledge index${tool.description ? ` (${tool.description})` : ''} ` +
              'and returns the most relevant passages with their sources.',
            parameters: {
              type: 'object',
              properties: { query: { type: 'string', description: 'What to look for' } },
              required: ['query'],
              additionalProperties: false,
            },
          },
        },
        async run(args, signal) {
          if (typeof args.query !== 'string' || args.query.trim() === '')
            return { text: 'query must be a non-empty string', isError: true };
          const hits = aboveMinimum(
            knowledge,
            await searchIndex(s, agent, {
              index,
              embeddings: new PromptEmbeddings(args.query, signal, context.spend),
              scope,
              top: topN,
              mode: knowledge.searchMode,
            }),
          );
          citations.push(...hits.map(citationOf));
          return {
            text: JSON.stringify(hits.map((h) => ({ title: h.title, source: h.source, text: h.text }))),
            isError: false,
          };
        },
      });
    }
    // An interpreter gets ready while the model thinks about calling it.
    if (tool.tool_type === 'plugin' || tool.tool_type === 'code-interpreter') s.plugins.sandbox.warm();
    if (tool.tool_type === 'plugin') {
      // A plugin removed since the agent was saved costs the turn that tool, not the answer.
      const plugin = await s.plugins
        .runnable(tool.plugin_object_id, 'agent tool', 'plugin_object_id')
        .catch((e: unknown) => {
          s.log.warn('A plugin tool cannot run', {
            tool: tool.name,
            error: e instanceof Error ? e.message : String(e),
          });
          return undefined;
        });
      if (plugin) {
        const taken = functions.some((f) => f.definition.function.name === plugin.shortName);
        functions.push({
          tool: tool.name,
          ...pluginFunction(s, plugin, {
            name: taken ? functionName(tool.name, plugin.shortName) : plugin.shortName,
            description: tool.description ?? '',
          }),
        });
      }
    }
    if (tool.tool_type === 'code-interpreter' && !functions.some((f) => f.definition.function.name === 'python')) {
      functions.push({
        tool: tool.name,
        ...codeInterpreterFunction(s, {
          user,
          agentName: agent.name,
          sessionId: context.sessionId,
          attachments: context.attachments,
          artifacts,
        }),
      });
    }
    if (tool.tool_type === 'mcp') {
      let client: Promise<Client> | undefined;
      const connected = () => {
        if (!client) {
          client = connectMcp(s, tool, { user, agent, signal: (lifetime ??= new AbortController()).signal });
          client.then(
            (c) => clients.push(c),
            () => undefined,
          );
        }
        return client;
      };
      // A server that cannot list its tools (in time) costs the turn those tools, not the answer; the
      // servers are asked side by side.
      listings.push(
        mcpTools(tool, connected)
          .catch((e: unknown) => {
            s.log.warn('An MCP tool server could not list its tools', {
              tool: tool.name,
              error: e instanceof Error ? e.message : String(e),
            });
            return [];
          })
          .then((offered) => ({ tool, offered, connected })),
      );
    }
  }
  for (const { tool, offered, connected } of await Promise.all(listings)) {
    for (const fn of offered) {
      functions.push({
        tool: tool.name,
        definition: {
          type: 'function',
          function: { name: functionName(tool.name, fn.name), description: fn.description, parameters: fn.inputSchema },
        },
        async run(args, signal) {
          const result = await (await connected()).callTool({ name: fn.name, arguments: args }, undefined, { signal });
          return resultText(result);
        },
      });
    }
  }
  return {
    functions,
    citations,
    artifacts,
    async close() {
      await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
      lifetime?.abort();
    },
  };
}
