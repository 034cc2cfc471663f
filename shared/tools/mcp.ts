// Model Context Protocol tool servers over streamable HTTP, with the official SDK's client. Connections go through the
// rules of user URLs (docs/api-decisions.md, Outbound URLs) (every address checked at connect, redirects refused); the
// server's tools are listed once per tool resource version for a minute, and only the allow-listed ones are offered to
// the model. The platform's own memory tool server is reached in process, so no credential of the platform ever travels
// to a URL a tool definition names.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { RequestInit as UndiciInit } from 'undici';
import { undiciFetch } from '../net/undici.js';
import type { Principal } from '../auth/principal.js';
import { readSecret } from '../config.js';
import type { AgentDoc } from '../providers/types/agent.js';
import { PLATFORM_MEMORY, type ToolDoc } from '../providers/types/catalog.js';
import { VERSION } from '../version.js';
import type { ModelCredentials } from '../models/credentials.js';
import type { Dispatcher } from '../net/undici.js';
import type { McpServerDeps } from '../memory/mcp-server.js';

/** What this module uses of the service (the hosts pass the whole of it). */
export interface McpDeps extends McpServerDeps {
  readonly credentials: ModelCredentials;
  readonly userDispatcher: Dispatcher;
}

export interface McpTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

const LIST_TTL_MS = 60_000;
const listed = new Map<string, { tools: McpTool[]; expires: number; failed?: string }>();

/** The signed-in user as a tool server reads it from X-USER-IDENTITY: base64 of JSON. */
const identityOf = (user: Principal) =>
  Buffer.from(
    JSON.stringify({ upn: user.upn, oid: user.id, name: user.name ?? null, group_ids: user.groups }),
  ).toString('base64');

/** A tool server's connection: its definition, its URL, and the user the calls are made for. */
interface ServerCall {
  tool: ToolDoc;
  url: string;
  user: Principal;
}

async function headersOf(s: McpDeps, { tool, url, user }: ServerCall): Promise<Record<string, string>> {
  const context = Object.fromEntries(
    Object.keys(tool.headers ?? {}).map((name) => [name.toLowerCase(), identityOf(user)]),
  );
  return { ...context, ...(await authorization(s, tool, url)) };
}

async function authorization(s: McpDeps, tool: ToolDoc, url: string): Promise<Record<string, string>> {
  const auth = tool.authentication_parameters;
  if (tool.authentication_type === 'APIKey') {
    const key = auth?.api_key_secret_name ? readSecret(auth.api_key_secret_name) : undefined;
    if (!key)
      throw new Error(
        `the API key of tool ${tool.name} (secret ${auth?.api_key_secret_name ?? '?'}) is not configured`,
      );
    return { authorization: `Bearer ${key}` };
  }
  // Through the gate: only an https host of the scope's audience receives the token (else the call fails).
  if (tool.authentication_type === 'AzureIdentity')
    return { authorization: `Bearer ${await s.credentials.bearer(url, auth?.scope)}` };
  return {};
}

/** Whom a tool server's client works for: the user and agent of a turn, which may end the client (its signal). */
export interface McpCaller {
  user: Principal;
  agent: AgentDoc;
  signal?: AbortSignal | undefined;
}

/** A connected client for one completion's calls; close it when the turn ends. */
export async function connectMcp(s: McpDeps, tool: ToolDoc, { user, agent, signal }: McpCaller): Promise<Client> {
  const url = tool.url;
  if (url === undefined) throw new Error(`tool ${tool.name} names no server URL`);
  // The MCP SDK is loaded by the first agent that uses a tool server, not at start-up.
  const [{ Client }, { StreamableHTTPClientTransport }, { InMemoryTransport }] = await Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/inMemory.js'),
  ]);
  const client = new Client({ name: 'agent-platform', version: VERSION });
  if (url === PLATFORM_MEMORY) {
    // The memory tool server, reached in process: the agent and user are the completion's own.
    const { memoryServer } = await import('../memory/mcp-server.js');
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await memoryServer(s, user, agent).connect(serverSide);
    await client.connect(clientSide);
    return client;
  }
  // undici's fetch and the SDK's (the global one) have the same shapes, typed by two copies of undici's types.
  const guardedFetch = (url: string | URL, init?: RequestInit) =>
    undiciFetch(url, {
      ...(init as UndiciInit),
      dispatcher: s.userDispatcher,
      redirect: 'error',
      ...(signal ? { signal } : {}),
    }) as Promise<Response>;
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: await headersOf(s, { tool, url, user }) },
    fetch: guardedFetch,
  });
  await client.connect(transport);
  return client;
}

/** Longest a completion waits for a tool server to connect and list its tools. */
export const LIST_TIMEOUT_MS = 5_000;
/** How long a server that could not list its tools is not asked again (each completion would wait for it). */
const FAILED_TTL_MS = 30_000;

class ListTimeout extends Error {}

/**
 * The allow-listed tools of the server, as it describes them, within `timeoutMs` (connecting included); a
 * server that fails or hangs is remembered for a while, so it costs each completion nothing more.
 */
export async function mcpTools(
  tool: ToolDoc,
  client: () => Promise<Client>,
  timeoutMs = LIST_TIMEOUT_MS,
): Promise<McpTool[]> {
  const key = `${tool.object_id}@${tool.updated_on}`;
  const hit = listed.get(key);
  if (hit && hit.expires > Date.now()) {
    if (hit.failed) throw new Error(hit.failed);
    return hit.tools;
  }
  const allowed = new Set(tool.allowed_tools ?? []);
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>(
    (_, reject) =>
      (timer = setTimeout(() => reject(new ListTimeout(`no tool list within ${timeoutMs} ms`)), timeoutMs)),
  );
  let tools: Awaited<ReturnType<Client['listTools']>>['tools'];
  try {
    ({ tools } = await Promise.race([client().then((c) => c.listTools(undefined, { timeout: timeoutMs })), deadline]));
  } catch (e) {
    const failed = e instanceof Error ? e.message : String(e);
    if (listed.size > 1000) listed.clear();
    listed.set(key, { tools: [], expires: Date.now() + FAILED_TTL_MS, failed });
    throw e;
  } finally {
    clearTimeout(timer);
  }
  const offered = tools
    .filter((t) => allowed.has(t.name))
    .map((t) => ({ name: t.name, description: (t.description ?? '').slice(0, 1000), inputSchema: t.inputSchema }));
  if (listed.size > 1000) listed.clear();
  listed.set(key, { tools: offered, expires: Date.now() + LIST_TTL_MS });
  return offered;
}

const isTextPart = (p: unknown): p is { type: 'text'; text: string } =>
  typeof p === 'object' && p !== null && 'type' in p && p.type === 'text' && 'text' in p && typeof p.text === 'string';

/** A tool result as text the model reads: the text parts of the content, or the structured content. */
export function resultText(result: Record<string, unknown>): { text: string; isError: boolean } {
  const parts: unknown[] = Array.isArray(result.content) ? result.content : [];
  const text = parts
    .filter(isTextPart)
    .map((p) => p.text)
    .join('\n');
  const structured = result.structuredContent ?? result.toolResult;
  return {
    text: text || (structured !== undefined ? JSON.stringify(structured) : ''),
    isError: result.isError === true,
  };
}
