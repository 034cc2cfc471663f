// `npm run cli -- <command>`: the tasks an operator repeats, over the public APIs only (what any client could
// call). Addresses and the instance come from the same settings as the server (HOST, CORE_PORT,
// MANAGEMENT_PORT, INSTANCE_ID) or from --core/--management/--instance; the bearer token from --token or
// TOKEN, else (with the local identity provider) one is signed for --as or the default user.
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { createParser } from 'eventsource-parser';
import { LOCAL_DEFAULT_USER, loadLocalKey, mintLocalToken } from '../shared/auth/local-idp.js';
import { loadConfig } from '../shared/config.js';
import { ACT_ON_BEHALF_ROLE } from '../shared/memory/on-behalf.js';
import { REQUEST_TYPES } from '../shared/analytics/request.js';

const USAGE = `npm run cli -- <command> [options]

Commands:
  create <file.json>                     create or update the resources in a file, in order (an agent with
                                         its endpoint, model, prompt and workflow); prints each object id
  token [--upn U] [--roles r1,r2]        a bearer token from the local identity provider
  agent-token <agent> --name N [--description D] [--expires ISO-DATE]
                                         issue an agent access token; its secret is printed this once
  complete <agent> <prompt...> [--session ID] [--stream]
                                         run a completion; prints the answer (as it streams with --stream)
  tail <operation-id> [--interval SECONDS]
                                         follow an async completion until it ends; prints each change
  memory-export --user UPN [--scope user|agent|combined] [--agent NAME]
                                         a user's memory as markdown (needs the ${ACT_ON_BEHALF_ROLE} app role)
  analytics <report> [--from DATE] [--to DATE] [--agent NAME] [--user UPN] [--top N] [--json]
                                         a report as a table; reports: ${REQUEST_TYPES.join(', ')}

Options for every command:
  --core URL  --management URL  --instance ID  --token TOKEN (or env TOKEN)  --as UPN (local sign-in)
`;

class CliError extends Error {}

const { values: flags, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    core: { type: 'string' },
    management: { type: 'string' },
    instance: { type: 'string' },
    token: { type: 'string' },
    as: { type: 'string' },
    upn: { type: 'string' },
    roles: { type: 'string' },
    name: { type: 'string' },
    description: { type: 'string' },
    expires: { type: 'string' },
    session: { type: 'string' },
    stream: { type: 'boolean' },
    interval: { type: 'string' },
    user: { type: 'string' },
    scope: { type: 'string' },
    agent: { type: 'string' },
    from: { type: 'string' },
    to: { type: 'string' },
    top: { type: 'string' },
    json: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  },
});

const config = loadConfig();
const instance = flags.instance ?? config.instanceId;
const coreUrl = (flags.core ?? `http://${config.host}:${config.corePort}`).replace(/\/$/, '');
const managementUrl = (flags.management ?? `http://${config.host}:${config.managementPort}`).replace(/\/$/, '');
const core = (path: string) => `${coreUrl}/instances/${instance}${path}`;
const management = (path: string) => `${managementUrl}/instances/${instance}/providers/${path}`;

/** A token signed by the local identity provider (the server's own key, under DATA_DIR). */
async function localToken(upn: string | undefined, roles: string[] = []): Promise<string> {
  if (config.auth.kind !== 'local') throw new CliError('AUTH_* settings are set: pass --token or set TOKEN to a token from your identity provider');
  const user = upn === undefined ? LOCAL_DEFAULT_USER : { upn };
  return mintLocalToken(await loadLocalKey(config.auth.keyFile), config.auth.issuer, config.auth.audience, { ...user, groups: [], roles, expiresInSeconds: 3600 });
}

let bearer: Promise<string> | undefined;
const token = () => {
  const given = flags.token ?? process.env.TOKEN;
  return (bearer ??= given ? Promise.resolve(given) : localToken(flags.as, flags.as ? [] : [ACT_ON_BEHALF_ROLE]));
};

/** Calls the API; a non-2xx answer becomes an error with the envelope's message. */
async function call(method: string, url: string, body?: unknown, headers: Record<string, string> = {}): Promise<Response> {
  const response = await fetch(url, {
    method,
    headers: { authorization: `Bearer ${await token()}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (response.ok) return response;
  const text = await response.text();
  let message = text;
  try {
    const envelope = JSON.parse(text) as { error?: { message?: string }; message?: string; title?: string; detail?: string };
    message = envelope.error?.message ?? envelope.detail ?? envelope.message ?? envelope.title ?? text;
  } catch {
    // not JSON: the text as it is
  }
  throw new CliError(`${method} ${new URL(url).pathname}: ${response.status} ${message}`);
}

const json = async <T>(r: Promise<Response>) => (await (await r).json()) as T;
const out = (text: string): void => {
  process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
};

/** One resource of a create file: its provider/type path and its body (with its name). */
interface FileResource {
  type?: unknown;
  name?: unknown;
  [property: string]: unknown;
}

async function create(file: string | undefined): Promise<void> {
  if (!file) throw new CliError('create needs a file');
  let parsed: { resources?: FileResource[] } & Record<string, unknown>;
  try {
    parsed = JSON.parse(await readFile(file, 'utf8')) as typeof parsed;
  } catch (e) {
    throw new CliError(`${file}: ${e instanceof Error ? e.message : String(e)}`);
  }
  // A file is a list of resources, or one agent.
  const resources: FileResource[] = parsed.resources ?? [{ type: 'Svc.Agent/agents', ...(parsed as { name: string }) }];
  for (const { type, ...body } of resources) {
    if (typeof type !== 'string' || !/^Svc\.[A-Za-z]+\/[A-Za-z]+$/.test(type) || typeof body.name !== 'string') throw new CliError(`each resource needs a type like Svc.Agent/agents and a name (got ${JSON.stringify({ type, name: body.name })})`);
    const result = await json<{ object_id: string }>(call('POST', management(`${type}/${encodeURIComponent(body.name)}`), body));
    out(`${type}/${body.name}  ${result.object_id}`);
  }
}

async function agentToken(agent: string | undefined): Promise<void> {
  if (!agent || !flags.name) throw new CliError('agent-token needs an agent and --name');
  const body = { type: 'agent-access-token', name: flags.name, ...(flags.description ? { description: flags.description } : {}), ...(flags.expires ? { expiration_date: new Date(flags.expires).toISOString() } : {}) };
  const result = await json<{ object_id: string; resource: string }>(call('POST', management(`Svc.Agent/agents/${encodeURIComponent(agent)}/agent-access-tokens`), body));
  process.stderr.write(`Issued ${result.object_id}. The secret below is shown this once; store it now.\n`);
  out(result.resource);
}

async function complete(agent: string | undefined, prompt: string[]): Promise<void> {
  if (!agent || prompt.length === 0) throw new CliError('complete needs an agent and a prompt');
  const body = { agent_name: agent, user_prompt: prompt.join(' '), ...(flags.session ? { session_id: flags.session } : {}) };
  if (!flags.stream) {
    const answer = await json<{ completion: string }>(call('POST', core('/completions'), body));
    out(answer.completion);
    return;
  }
  const response = await call('POST', core('/completions'), body, { accept: 'text/event-stream' });
  let failure: string | undefined;
  const parser = createParser({
    onEvent(event) {
      const data = JSON.parse(event.data) as { text?: string; message?: string; error?: { message?: string } };
      if (event.event === 'delta') process.stdout.write(data.text ?? '');
      else if (event.event === 'error') failure = data.error?.message ?? data.message ?? event.data;
    },
  });
  const reader = response.body?.getReader();
  const decoder = new TextDecoder();
  for (let piece = await reader?.read(); piece && !piece.done; piece = await reader?.read()) parser.feed(decoder.decode(piece.value, { stream: true }));
  if (failure) throw new CliError(failure);
  process.stdout.write('\n');
}

async function tail(operationId: string | undefined): Promise<void> {
  if (!operationId) throw new CliError('tail needs an operation id');
  const intervalMs = Math.max(0.2, Number(flags.interval ?? 1)) * 1000;
  let last = '';
  for (;;) {
    const op = await json<{ status: string; status_message: string; result: { completion?: string } | null }>(call('GET', core(`/async-completions/${encodeURIComponent(operationId)}/status`)));
    const line = `${op.status}: ${op.status_message}`;
    if (line !== last) out(`${new Date().toISOString()}  ${line}`);
    last = line;
    if (op.status !== 'InProgress') {
      if (op.result?.completion) out(op.result.completion);
      if (op.status !== 'Completed') process.exitCode = 1;
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

async function memoryExport(): Promise<void> {
  if (!flags.user) throw new CliError('memory-export needs --user');
  const query = new URLSearchParams({ scope: flags.scope ?? 'user', ...(flags.agent ? { agentObjectId: `/instances/${instance}/providers/Svc.Agent/agents/${flags.agent}` } : {}) });
  const response = await call('GET', core(`/memory/export?${query}`), undefined, { 'x-user-identity': JSON.stringify({ upn: flags.user }) });
  out(await response.text());
}

/** Rows of scalars as an aligned text table; nested values as compact JSON. */
function table(rows: Record<string, unknown>[]): string {
  if (rows.length === 0) return '(no rows)';
  const columns = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  const cell = (v: unknown) => (v === null || v === undefined ? '' : typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? String(v) : JSON.stringify(v));
  const cells = rows.map((r) => columns.map((c) => cell(r[c])));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((r) => (r[i] ?? '').length)));
  const line = (values: string[]) => values.map((v, i) => v.padEnd(widths[i] ?? 0)).join('  ').trimEnd();
  return [line(columns), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)].join('\n');
}

async function analytics(report: string | undefined): Promise<void> {
  const type = REQUEST_TYPES.find((t) => t.toLowerCase() === report?.toLowerCase());
  if (!type) throw new CliError(`analytics needs a report: ${REQUEST_TYPES.join(', ')}`);
  const filters = {
    ...(flags.from ? { start_date: new Date(flags.from).toISOString() } : {}),
    ...(flags.to ? { end_date: new Date(flags.to).toISOString() } : {}),
    ...(flags.agent ? { agent_name: flags.agent } : {}),
    ...(flags.user ? { username: flags.user } : {}),
    ...(flags.top ? { top_count: Number(flags.top) } : {}),
  };
  const answer = await json<{ resource: { data: unknown } }>(call('POST', management('Svc.Analytics/analytics/query?api-version=2024-02-16'), { request_type: type, filters }));
  const data = answer.resource.data;
  if (flags.json) {
    out(JSON.stringify(data, null, 2));
    return;
  }
  if (Array.isArray(data)) {
    out(table(data as Record<string, unknown>[]));
    return;
  }
  if (data && typeof data === 'object') {
    // An object: its scalars as name/value rows, then each list it holds as a table of its own.
    const entries = Object.entries(data as Record<string, unknown>);
    const lists = entries.filter(([, v]) => Array.isArray(v));
    out(table(entries.filter(([, v]) => !Array.isArray(v)).map(([name, value]) => ({ name, value }))));
    for (const [name, rows] of lists) out(`\n${name}\n${table(rows as Record<string, unknown>[])}`);
    return;
  }
  out(String(data));
}

async function main(): Promise<void> {
  const [command, ...rest] = positionals;
  if (flags.help || !command) {
    out(USAGE);
    return;
  }
  switch (command) {
    case 'create':
      return create(rest[0]);
    case 'token':
      out(await localToken(flags.upn, flags.roles ? flags.roles.split(',') : []));
      return;
    case 'agent-token':
      return agentToken(rest[0]);
    case 'complete':
      return complete(rest[0], rest.slice(1));
    case 'tail':
      return tail(rest[0]);
    case 'memory-export':
      return memoryExport();
    case 'analytics':
      return analytics(rest[0]);
    default:
      throw new CliError(`unknown command ${command}`);
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`${e instanceof CliError ? e.message : e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  if (!(e instanceof CliError) || /needs|unknown command/.test(e.message)) process.stderr.write(`\n${USAGE}`);
  process.exit(1);
});
