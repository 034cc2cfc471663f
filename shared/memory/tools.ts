// The memory tools for an out-of-process tool server: get_memory, append_memory and
// clear_memory, forwarded to the Core API memory endpoints for the signed-in user (X-USER-IDENTITY).
// The agent object id comes from the server's configuration, never from the prompt; nothing is stored here.
// Import and export are not agent-facing tools.
import type { UserIdentity } from './on-behalf.js';

export interface MemoryToolsOptions {
  /** Core API base URL, e.g. http://127.0.0.1:7071 */
  coreUrl: string;
  instanceId: string;
  /** The agent the tools serve: `/instances/{id}/providers/Svc.Agent/agents/{name}`. */
  agentObjectId: string;
  /** The tool server's own credential: a token of a principal with the Memory.ActOnBehalf app role. */
  serviceToken: () => Promise<string>;
  fetch?: typeof fetch;
}

export type ToolResult = { ok: true; memory: unknown } | { ok: false; status: number; error: unknown };

export class MemoryTools {
  constructor(private readonly o: MemoryToolsOptions) {}

  private async call(
    user: UserIdentity,
    { method, path, body }: { method: 'GET' | 'POST'; path: string; body?: unknown },
  ): Promise<ToolResult> {
    const res = await (this.o.fetch ?? fetch)(`${this.o.coreUrl}/instances/${this.o.instanceId}/memory${path}`, {
      method,
      headers: {
        authorization: `Bearer ${await this.o.serviceToken()}`,
        // Base64 keeps non-ASCII names header-safe; the service accepts plain JSON too.
        'x-user-identity': Buffer.from(JSON.stringify(user)).toString('base64'),
        ...(body ? { 'content-type': 'application/json' } : {}),
      },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    const payload: unknown = await res.json();
    return res.ok ? { ok: true, memory: payload } : { ok: false, status: res.status, error: payload };
  }

  /** get_memory(scope): reads the user's memory; the agent part always refers to this server's agent. */
  get_memory(args: { scope?: 'user' | 'agent' | 'combined' }, user: UserIdentity): Promise<ToolResult> {
    const scope = args.scope ?? 'combined';
    const query = new URLSearchParams({ scope, ...(scope === 'user' ? {} : { agentObjectId: this.o.agentObjectId }) });
    return this.call(user, { method: 'GET', path: `?${query.toString()}` });
  }

  /** append_memory(scope, memory, reason?): the markdown in `memory` becomes content_markdown. */
  append_memory(
    args: { scope: 'user' | 'agent'; memory: string; reason?: string },
    user: UserIdentity,
  ): Promise<ToolResult> {
    const body = {
      scope: args.scope,
      content_markdown: args.memory,
      ...(args.reason ? { reason: args.reason } : {}),
      ...(args.scope === 'agent' ? { agent_object_id: this.o.agentObjectId } : {}),
    };
    return this.call(user, { method: 'POST', path: '/append', body });
  }

  /** clear_memory(scope, confirm): calls clear only when confirm is true; otherwise a validation error of its own. */
  async clear_memory(args: { scope: 'user' | 'agent'; confirm?: boolean }, user: UserIdentity): Promise<ToolResult> {
    if (args.confirm !== true) {
      return {
        ok: false,
        status: 400,
        error: {
          error: {
            code: 'ValidationError',
            message: 'confirm must be true to clear memory',
            details: [{ field: 'confirm', message: 'confirm must be true' }],
          },
        },
      };
    }
    const body = {
      scope: args.scope,
      confirm: true,
      ...(args.scope === 'agent' ? { agent_object_id: this.o.agentObjectId } : {}),
    };
    return this.call(user, { method: 'POST', path: '/clear', body });
  }
}
