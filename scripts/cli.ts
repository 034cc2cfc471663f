// `npm run cli -- <command>`: the tasks an operator repeats, over the public APIs only (what any client could
// call). Addresses and the instance come from the same settings as the server (HOST, CORE_PORT,
// MANAGEMENT_PORT, INSTANCE_ID) or from --core/--management/--instance; the bearer token from --token or
// TOKEN, else (with the local identity provider) one is signed for --as or the default user.
import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createParser } from 'eventsource-parser';
import { LOCAL_DEFAULT_USER, loadLocalKey, mintLocalToken } from '../shared/auth/local-idp.js';
import { loadConfig } from '../shared/config.js';
import { ACT_ON_BEHALF_ROLE } from '../shared/memory/on-behalf.js';
import { REQUEST_TYPE_NUMBERS } from '../shared/analytics/request.js';
import { readArchive } from '../shared/plugins/archive.js';

const REPORTS = [...REQUEST_TYPE_NUMBERS.values()];

const USAGE = `npm run cli -- <command> [options]

Commands:
  create <file.json>                     create or update the resources in a file, in order (an agent with
                                         its endpoint, model, prompt and workflow; {instance} in a value is
                                         the instance id); prints each object id; examples/ has three
  first-agent                            create examples/chat-agent.json and ask its agent a first question
                                         (the local mock model must be running: npm run mock-llm)
  token [--upn U] [--roles r1,r2]        a bearer token from the local identity provider
  agent-token <agent> --name N [--description D] [--expires ISO-DATE]
                                         issue an agent access token; its secret is printed this once
  complete <agent> <prompt...> [--session ID] [--stream] [--json]
                                         run a completion in a session (a new one without --session); prints
                                         the answer (as it streams with --stream), the session, the token
                                         counts and the citations; --json prints the whole answer
  process <pipeline>                     start a run of a data pipeline and follow it until it ends
  tail <operation-id> [--interval SECONDS]
                                         follow an async completion until it ends; prints each change
  memory-export --user UPN [--scope user|agent|combined] [--agent NAME]
                                         a user's memory as markdown (locally signed with the
                                         ${ACT_ON_BEHALF_ROLE} app role; with AUTH_* set, --token must hold it)
  analytics <report> [--from DATE] [--to DATE] [--agent NAME] [--user UPN] [--top N] [--json]
                                         a report as a table; reports: ${REPORTS.join(', ')}
  export <package> <version> <object-id...> [--out FILE]
                                         export resources as a version of an artifact package and download
                                         it (default FILE: <package>-<version>.zip); secrets never leave
  plan <file.zip> [--json]               upload the package to the instance (unless it has that version) and
                                         show what apply would change, field by field
  apply <file.zip> [--json]              upload it, then make the instance match it (checked whole first)

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
    out: { type: 'string' },
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
  if (config.auth.kind !== 'local')
    throw new CliError('AUTH_* settings are set: pass --token or set TOKEN to a token from your identity provider');
  const user = upn === undefined ? LOCAL_DEFAULT_USER : { upn };
  return mintLocalToken(await loadLocalKey(config.auth.keyFile), config.auth.issuer, config.auth.audience, {
    ...user,
    groups: [],
    roles,
    expiresInSeconds: 3600,
  });
}

let bearer: Promise<string> | undefined;
const token = () => {
  const given = flags.token ?? process.env.TOKEN;
  return (bearer ??= given ? Promise.resolve(given) : localToken(flags.as, flags.as ? [] : [ACT_ON_BEHALF_ROLE]));
};

/** What the CLI calls the request fields an error may name. */
const CLI_WORDS: Record<string, string> = {
  agent_name: 'the agent',
  user_prompt: 'the prompt',
  session_id: '--session',
  expiration_date: '--expires',
  start_date: '--from',
  end_date: '--to',
  username: '--user',
  top_count: '--top',
};
const inCliWords = (message: string) => message.replace(/\b[a-z]+_[a-z_]+\b/g, (field) => CLI_WORDS[field] ?? field);

/** Calls the API; a non-2xx answer becomes an error with the envelope's message, in the CLI's words. */
async function call(
  method: string,
  url: string,
  body?: unknown,
  headers: Record<string, string> = {},
  bearer: Promise<string> = token(),
): Promise<Response> {
  const response = await fetch(url, {
    method,
    headers: {
      authorization: `Bearer ${await bearer}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (response.ok) return response;
  const text = await response.text();
  let message = text;
  try {
    const envelope = JSON.parse(text) as {
      error?: { message?: string; details?: { field: string; message: string }[] };
      message?: string;
      title?: string;
      detail?: string;
    };
    const field = envelope.error?.details?.[0]?.field;
    const said = envelope.error?.message ?? envelope.detail ?? envelope.message ?? envelope.title ?? text;
    message = field && field !== 'request' ? `${said} (${field})` : said;
  } catch {
    // not JSON: the text as it is
  }
  throw new CliError(`${response.status}: ${inCliWords(message)} [${method} ${new URL(url).pathname}]`);
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
  // `{instance}` in any value is this service's instance id, so a file works against any instance.
  const withInstance = (value: unknown): unknown =>
    typeof value === 'string'
      ? value.replaceAll('{instance}', instance)
      : Array.isArray(value)
        ? value.map(withInstance)
        : value && typeof value === 'object'
          ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withInstance(v)]))
          : value;
  for (const { type, ...given } of resources) {
    const body = Object.fromEntries(Object.entries(given).map(([k, v]) => [k, withInstance(v)]));
    if (typeof type !== 'string' || !/^Svc\.[A-Za-z]+\/[A-Za-z]+$/.test(type) || typeof body.name !== 'string')
      throw new CliError(
        `each resource needs a type like Svc.Agent/agents and a name (got ` +
          `${JSON.stringify({ type, name: body.name })})`,
      );
    const result = await json<{ object_id: string }>(
      call('POST', management(`${type}/${encodeURIComponent(body.name)}`), body),
    );
    out(`${type}/${body.name}  ${result.object_id}`);
  }
}

async function agentToken(agent: string | undefined): Promise<void> {
  if (!agent || !flags.name) throw new CliError('agent-token needs an agent and --name');
  const body = {
    type: 'agent-access-token',
    name: flags.name,
    ...(flags.description ? { description: flags.description } : {}),
    ...(flags.expires ? { expiration_date: new Date(flags.expires).toISOString() } : {}),
  };
  const result = await json<{ object_id: string; resource: string }>(
    call('POST', management(`Svc.Agent/agents/${encodeURIComponent(agent)}/agent-access-tokens`), body),
  );
  process.stderr.write(`Issued ${result.object_id}. The secret below is shown this once; store it now.\n`);
  out(result.resource);
}

interface Answer {
  completion: string;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  citations: { title?: string; source?: string; score?: number }[];
}

/** The session to answer in: --session, else a new one (printed, so the conversation can go on). */
async function sessionFor(agent: string): Promise<string> {
  if (flags.session) return flags.session;
  const session = await json<{ id: string }>(call('POST', core('/sessions'), { name: `CLI: ${agent}` }));
  return session.id;
}

/** What the answer cost and where it came from, after the answer itself. */
function summary(
  session: string,
  answer: Pick<Answer, 'prompt_tokens' | 'completion_tokens' | 'total_tokens' | 'citations'>,
): string {
  const lines = [
    `session ${session}  (go on with --session ${session})`,
    `tokens  ${answer.prompt_tokens} prompt + ${answer.completion_tokens} completion = ${answer.total_tokens}`,
  ];
  for (const [i, c] of answer.citations.entries()) {
    const score = c.score !== undefined ? `  (score ${c.score.toFixed(3)})` : '';
    lines.push(`[${i + 1}] ${c.title ?? ''} ${c.source ?? ''}${score}`.trimEnd());
  }
  return lines.join('\n');
}

async function complete(agent: string | undefined, prompt: string[]): Promise<void> {
  if (!agent || prompt.length === 0)
    throw new CliError('complete needs an agent and a prompt: complete <agent> <prompt...>');
  const session = await sessionFor(agent);
  try {
    await answer(agent, prompt.join(' '), session);
  } catch (e) {
    // A session opened for a completion that was refused holds nothing: it goes again.
    if (!flags.session) await call('DELETE', core(`/sessions/${session}`)).catch(() => undefined);
    throw e;
  }
}

async function answer(agent: string, prompt: string, session: string): Promise<void> {
  const body = { agent_name: agent, user_prompt: prompt, session_id: session };
  if (!flags.stream) {
    const answer = await json<Answer>(call('POST', core('/completions'), body));
    if (flags.json) return out(JSON.stringify({ session_id: session, ...answer }, null, 2));
    out(answer.completion);
    process.stderr.write(`\n${summary(session, answer)}\n`);
    return;
  }
  const response = await call('POST', core('/completions'), body, { accept: 'text/event-stream' });
  let failure: string | undefined;
  let completed: Answer | undefined;
  const parser = createParser({
    onEvent(event) {
      const data = JSON.parse(event.data) as { text?: string; message?: string; error?: { message?: string } };
      if (event.event === 'delta' && !flags.json) process.stdout.write(data.text ?? '');
      else if (event.event === 'completed') completed = JSON.parse(event.data) as Answer;
      else if (event.event === 'error') failure = data.error?.message ?? data.message ?? event.data;
    },
  });
  const reader = response.body?.getReader();
  const decoder = new TextDecoder();
  for (let piece = await reader?.read(); piece && !piece.done; piece = await reader?.read())
    parser.feed(decoder.decode(piece.value, { stream: true }));
  if (failure) throw new CliError(inCliWords(failure));
  if (flags.json) return out(JSON.stringify({ session_id: session, ...completed }, null, 2));
  process.stdout.write('\n');
  if (completed) process.stderr.write(`\n${summary(session, completed)}\n`);
}

/** Creates the example chat agent and asks it a first question: the quick start's last step. */
async function firstAgent(): Promise<void> {
  const file = fileURLToPath(new URL('../examples/chat-agent.json', import.meta.url));
  const mock = await fetch('http://127.0.0.1:8080/v1/models').catch(() => undefined);
  if (!mock)
    throw new CliError(
      'the local mock model is not running on port 8080: start it with npm run mock-llm (in another ' +
        'terminal), then run this again',
    );
  await create(file);
  out('');
  await complete('first-agent', ['Hello! Who are you?']);
}

/** Starts a pipeline run and follows it until it ends, with its counts. */
async function processPipeline(pipeline: string | undefined): Promise<void> {
  if (!pipeline) throw new CliError('process needs a pipeline name: process <pipeline>');
  const { object_id } = await json<{ object_id: string }>(
    call('POST', management(`Svc.DataPipeline/dataPipelines/${encodeURIComponent(pipeline)}/process`), {}),
  );
  const run = object_id.split('/').pop() ?? '';
  out(`run ${run}`);
  let last = '';
  for (;;) {
    const { resource } = await json<{
      resource: { status: string; counts: Record<string, number>; errors: { source: string; message: string }[] };
    }>(call('GET', management(`Svc.DataPipeline/dataPipelineRuns/${run}`)));
    const line = `${resource.status}  ${Object.entries(resource.counts)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`;
    if (line !== last) out(line);
    last = line;
    if (resource.status === 'Completed' || resource.status === 'Failed') {
      for (const e of resource.errors) out(`  ${e.source}: ${e.message}`);
      if (resource.status === 'Failed') process.exitCode = 1;
      return;
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}

async function tail(operationId: string | undefined): Promise<void> {
  if (!operationId) throw new CliError('tail needs an operation id');
  const intervalMs = Math.max(0.2, Number(flags.interval ?? 1)) * 1000;
  let last = '';
  for (;;) {
    const op = await json<{ status: string; status_message: string; result: { completion?: string } | null }>(
      call('GET', core(`/async-completions/${encodeURIComponent(operationId)}/status`)),
    );
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
  const query = new URLSearchParams({
    scope: flags.scope ?? 'user',
    ...(flags.agent ? { agentObjectId: `/instances/${instance}/providers/Svc.Agent/agents/${flags.agent}` } : {}),
  });
  // The export acts for the user: locally it is signed with the on-behalf role whatever TOKEN holds.
  const bearer =
    flags.token === undefined && config.auth.kind === 'local' ? localToken(undefined, [ACT_ON_BEHALF_ROLE]) : token();
  const response = await call(
    'GET',
    core(`/memory/export?${query}`),
    undefined,
    { 'x-user-identity': JSON.stringify({ upn: flags.user }) },
    bearer,
  );
  out(await response.text());
}

/** Rows of scalars as an aligned text table; nested values as compact JSON. */
function table(rows: Record<string, unknown>[]): string {
  if (rows.length === 0) return '(no rows)';
  const columns = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  const cell = (v: unknown) =>
    v === null || v === undefined
      ? ''
      : typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean'
        ? String(v)
        : JSON.stringify(v);
  const cells = rows.map((r) => columns.map((c) => cell(r[c])));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((r) => (r[i] ?? '').length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => v.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  return [line(columns), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)].join('\n');
}

async function analytics(report: string | undefined): Promise<void> {
  const type = REPORTS.find((t) => t.toLowerCase() === report?.toLowerCase());
  if (!type) throw new CliError(`analytics needs a report: ${REPORTS.join(', ')}`);
  const filters = {
    ...(flags.from ? { start_date: new Date(flags.from).toISOString() } : {}),
    ...(flags.to ? { end_date: new Date(flags.to).toISOString() } : {}),
    ...(flags.agent ? { agent_name: flags.agent } : {}),
    ...(flags.user ? { username: flags.user } : {}),
    ...(flags.top ? { top_count: Number(flags.top) } : {}),
  };
  const answer = await json<{ resource: { data: unknown } }>(
    call('POST', management('Svc.Analytics/analytics/query?api-version=2024-02-16'), { request_type: type, filters }),
  );
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

async function exportPackage(
  name: string | undefined,
  version: string | undefined,
  objectIds: string[],
): Promise<void> {
  if (!name || !version || objectIds.length === 0)
    throw new CliError('export needs a package, a version and object ids: export <package> <version> <object-id...>');
  const packages = management('Svc.Platform/artifactPackages');
  await call('POST', `${packages}/${encodeURIComponent(name)}/export`, {
    package_version: version,
    resource_object_ids: objectIds,
  });
  const bytes = Buffer.from(
    await (
      await call(
        'GET',
        `${packages}/${encodeURIComponent(name)}?loadContent=true&version=${encodeURIComponent(version)}`,
      )
    ).arrayBuffer(),
  );
  const file = flags.out ?? `${name}-${version}.zip`;
  await writeFile(file, bytes);
  out(`${objectIds.length} resources exported as ${name} ${version}: ${file}`);
}

/** Uploads a package file unless the instance has that version (the same bytes again are accepted too). */
async function uploadPackage(file: string | undefined): Promise<{ name: string; version: string }> {
  if (!file) throw new CliError('plan and apply need a package file');
  const bytes = await readFile(file);
  const manifest = JSON.parse(
    (await readArchive(bytes, (n) => n === 'manifest.json')).files.get('manifest.json')?.toString('utf8') ?? 'null',
  ) as { name?: unknown; version?: unknown } | null;
  if (typeof manifest?.name !== 'string' || typeof manifest.version !== 'string')
    throw new CliError(`${file}: not an artifact package (its manifest.json names no name and version)`);
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(bytes)]), file);
  form.append(
    'resource',
    JSON.stringify({ type: 'artifact-package', name: manifest.name, package_version: manifest.version }),
  );
  const url = management(`Svc.Platform/artifactPackages/${encodeURIComponent(manifest.name)}`);
  const response = await fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${await token()}` },
    body: form,
  });
  if (!response.ok) throw new CliError(`${response.status}: ${await response.text()} [POST ${new URL(url).pathname}]`);
  return { name: manifest.name, version: manifest.version };
}

async function planOrApply(step: 'plan' | 'apply', file: string | undefined): Promise<void> {
  const { name, version } = await uploadPackage(file);
  const result = await json<{ changes: { object_id: string; action: string; fields: string[] }[] }>(
    call('POST', management(`Svc.Platform/artifactPackages/${encodeURIComponent(name)}/${step}`), {
      package_version: version,
    }),
  );
  if (flags.json) return out(JSON.stringify(result, null, 2));
  out(table(result.changes.map((c) => ({ action: c.action, object_id: c.object_id, fields: c.fields.join(', ') }))));
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
    case 'first-agent':
      return firstAgent();
    case 'process':
      return processPipeline(rest[0]);
    case 'memory-export':
      return memoryExport();
    case 'analytics':
      return analytics(rest[0]);
    case 'export':
      return exportPackage(rest[0], rest[1], rest.slice(2));
    case 'plan':
    case 'apply':
      return planOrApply(command, rest[0]);
    default:
      throw new CliError(`unknown command ${command}`);
  }
}

main().catch((e: unknown) => {
  process.stderr.write(
    `${e instanceof CliError ? e.message : e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`,
  );
  if (!(e instanceof CliError) || /needs|unknown command/.test(e.message)) process.stderr.write(`\n${USAGE}`);
  process.exit(1);
});
