// The sandbox in Azure: Azure Container Apps dynamic sessions, a Python code interpreter session pool
// (PLUGIN_SESSIONS_ENDPOINT), called over its REST API with the managed identity. Each run uses a session of
// its own (a new identifier), so no state passes between calls; the pool's sessions have no network egress
// (infra/), its Hyper-V boundary and resources bound memory, and the request's deadline bounds time.
//
// A session cannot call back into the service, so a workflow plugin's `svc` calls are answered by running it
// again: the run stops at the first `svc` call it has no answer for, the service answers it, and the plugin
// runs from the start in a new session with the answers so far, until it returns. A plugin's `svc` calls must
// therefore depend only on its argument and on the earlier answers (docs/plugins.md).
import { randomUUID } from 'node:crypto';
import { PYTHON_RUNNER } from './python-runner.js';
import {
  MAX_FILES,
  PluginFailed,
  isRecord,
  resultOf,
  safeName,
  type Sandbox,
  type SandboxFile,
  type SandboxJob,
  type SandboxLimits,
  type SandboxResult,
} from './sandbox.js';

export const SESSIONS_API_VERSION = '2024-02-02-preview';
/** The audience of the session pool's management API. */
export const SESSIONS_SCOPE = 'https://dynamicsessions.io/.default';

/** `svc` calls one workflow run may make (each costs a run of the plugin). */
const MAX_SVC_CALLS = 16;
/** Largest answer read from the pool. */
const MAX_RESPONSE_BYTES = 8 * 1024 * 1024;
const ANSWER_MARK = '\n<<sandbox-answer>>';

export interface SessionsOptions {
  endpoint: string;
  /** A bearer token for the pool (the managed identity's, for SESSIONS_SCOPE). */
  token: () => Promise<string>;
  limits: SandboxLimits;
}

interface Execution {
  status: string;
  stdout: string;
  stderr: string;
}

/** A request to the session pool, for the session `identifier`; its answer is read up to `maxBytes`. */
interface PoolRequest {
  path: string;
  identifier: string;
  method: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string | FormData;
  signal: AbortSignal;
  maxBytes?: number;
}

export class SessionsSandbox implements Sandbox {
  constructor(private readonly options: SessionsOptions) {}

  warm(): void {
    // The pool keeps its own sessions ready.
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  async run(job: SandboxJob): Promise<SandboxResult> {
    const deadline = AbortSignal.timeout(this.options.limits.timeoutMs);
    const signal = job.signal ? AbortSignal.any([job.signal, deadline]) : deadline;
    const task = job.task;
    const answers: string[] = [];
    try {
      for (;;) {
        const identifier = randomUUID();
        for (const f of job.workFiles) await this.upload(identifier, f, signal);
        const execution = await this.execute(identifier, script(job, answers), signal);
        const at = execution.stdout.lastIndexOf(ANSWER_MARK);
        if (at < 0)
          throw new PluginFailed(
            execution.stderr.trim().split('\n').pop()?.slice(0, 500) ||
              `the session ended with status ${execution.status} and no answer`,
          );
        const stdout = execution.stdout.slice(0, at);
        if (stdout.length > this.options.limits.outputBytes)
          throw new PluginFailed(
            `the plugin printed more than ${Math.round(this.options.limits.outputBytes / 1048576)} MiB`,
          );
        const answer = execution.stdout.slice(at + ANSWER_MARK.length).trim();
        const parsed = answerOf(answer);
        if (parsed.pending && !('code' in task) && task.svc) {
          if (answers.length >= MAX_SVC_CALLS)
            throw new PluginFailed(`the plugin made more than ${MAX_SVC_CALLS} svc calls`);
          const { method, args } = parsed.pending;
          answers.push(
            await task.svc(method, args).then(
              (value) => JSON.stringify({ value }),
              (e: unknown) => JSON.stringify({ error: e instanceof Error ? e.message : String(e) }),
            ),
          );
          continue;
        }
        return resultOf(answer, stdout.slice(0, 64 * 1024), await this.downloads(identifier, parsed.written, signal));
      }
    } catch (e) {
      if (deadline.aborted && !job.signal?.aborted)
        throw new PluginFailed(`the call took longer than ${Math.round(this.options.limits.timeoutMs / 1000)} s`);
      throw e;
    }
  }

  private url(path: string, identifier: string): string {
    const url = new URL(
      path,
      this.options.endpoint.endsWith('/') ? this.options.endpoint : `${this.options.endpoint}/`,
    );
    url.searchParams.set('api-version', SESSIONS_API_VERSION);
    url.searchParams.set('identifier', identifier);
    return url.toString();
  }

  private async call(request: PoolRequest): Promise<Uint8Array> {
    const { path, identifier, method, headers, body: sent, signal, maxBytes = MAX_RESPONSE_BYTES } = request;
    const response = await fetch(this.url(path, identifier), {
      method,
      headers: { ...headers, authorization: `Bearer ${await this.options.token()}` },
      ...(sent === undefined ? {} : { body: sent }),
      signal,
      redirect: 'error',
    });
    const body = await readCapped(response, maxBytes);
    if (!response.ok)
      throw new Error(
        `The session pool answered ${response.status} to ${path}: ${Buffer.from(body).toString('utf8').slice(0, 300)}`,
      );
    return body;
  }

  private async execute(identifier: string, code: string, signal: AbortSignal): Promise<Execution> {
    const body = JSON.stringify({ properties: { codeInputType: 'inline', executionType: 'synchronous', code } });
    const headers = { 'content-type': 'application/json' };
    const bytes = await this.call({ path: 'code/execute', identifier, method: 'POST', headers, body, signal });
    const answer: unknown = JSON.parse(Buffer.from(bytes).toString('utf8'));
    const p = isRecord(answer) && isRecord(answer.properties) ? answer.properties : {};
    const text = (value: unknown) => (typeof value === 'string' ? value : '');
    return { status: text(p.status), stdout: text(p.stdout), stderr: text(p.stderr) };
  }

  private async upload(identifier: string, file: SandboxFile, signal: AbortSignal): Promise<void> {
    const form = new FormData();
    form.append('file', new Blob([Buffer.from(file.bytes)]), file.name);
    await this.call({ path: 'files/upload', identifier, method: 'POST', body: form, signal });
  }

  /** The files the session says the call wrote, one after another, within the bytes a call may give back. */
  private async downloads(identifier: string, names: readonly string[], signal: AbortSignal): Promise<SandboxFile[]> {
    const files: SandboxFile[] = [];
    let left = this.options.limits.filesBytes;
    for (const name of names) {
      const path = `files/content/${name.split('/').map(encodeURIComponent).join('/')}`;
      const bytes = await this.call({ path, identifier, method: 'GET', signal, maxBytes: left });
      left -= bytes.length;
      files.push({ name, bytes });
    }
    return files;
  }
}

/** The runner's answer as the session printed it, checked: it is untrusted output of the plugin's session. */
function answerOf(text: string): { pending?: { method: string; args: Record<string, unknown> }; written: string[] } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new PluginFailed('the session answered something that is not JSON');
  }
  const { pending, written = [] } = isRecord(parsed) ? parsed : {};
  if (
    !Array.isArray(written) ||
    written.length > MAX_FILES ||
    !written.every((n): n is string => typeof n === 'string' && safeName(n))
  ) {
    throw new PluginFailed(`the session named written files it may not (at most ${MAX_FILES} relative names)`);
  }
  if (pending === undefined) return { written };
  if (!isRecord(pending) || typeof pending.method !== 'string' || !isRecord(pending.args))
    throw new PluginFailed('the session asked svc something that is not a call');
  return { pending: { method: pending.method, args: pending.args }, written };
}

async function readCapped(response: Response, maxBytes: number): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = response.body?.getReader();
  for (let read = await reader?.read(); reader && read && !read.done; read = await reader.read()) {
    size += read.value.length;
    if (size > maxBytes) {
      await reader.cancel();
      throw new PluginFailed(`the session pool answered more than ${Math.round(maxBytes / 1048576)} MiB`);
    }
    chunks.push(read.value);
  }
  return Buffer.concat(chunks);
}

/** The script a session runs: the package's files unpacked, the runner, the answers to `svc` calls so far, the call. */
function script(job: SandboxJob, answers: readonly string[]): string {
  const task = job.task;
  const files = Object.fromEntries(job.packageFiles.map((f) => [f.name, Buffer.from(f.bytes).toString('base64')]));
  const spec =
    'code' in task
      ? { code: task.code }
      : { entry_point: task.entryPoint, argument: task.argument, svc: Boolean(task.svc) };
  const text = (value: unknown) => JSON.stringify(JSON.stringify(value));
  return `${PYTHON_RUNNER}
import base64 as _b64, tempfile as _tempfile
_package_dir = _tempfile.mkdtemp()
for _name, _data in _json.loads(${text(files)}).items():
    _path = _os.path.join(_package_dir, _name)
    _os.makedirs(_os.path.dirname(_path), exist_ok=True)
    with open(_path, 'wb') as _f:
        _f.write(_b64.b64decode(_data))
_answers = _json.loads(${text(answers)})
class _SvcPending(BaseException):
    sandbox_pending = True
def _svc_call(method, args):
    if _svc_count[0] < len(_answers):
        _svc_count[0] += 1
        return _answers[_svc_count[0] - 1]
    raise _SvcPending({'method': method, 'args': _json.loads(args)})
_svc_count = [0]
_job = _json.loads(${text(spec)})
_job['package_dir'] = _package_dir
_job['work_dir'] = '/mnt/data' if _os.path.isdir('/mnt/data') else _os.getcwd()
try:
    _answer = _sandbox_run(_json.dumps(_job))
except _SvcPending as _p:
    _answer = _json.dumps({'pending': _p.args[0]})
print(${JSON.stringify(ANSWER_MARK)} + _answer)
`;
}
