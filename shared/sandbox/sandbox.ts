// The Python sandbox that plugins and the code interpreter run in, behind one interface with two adapters:
// Pyodide in isolated processes on the service's own machine (pyodide-sandbox.ts), and Azure Container Apps
// dynamic sessions (sessions-sandbox.ts) when PLUGIN_SESSIONS_ENDPOINT is set. Every call starts from a fresh
// interpreter, so nothing one call leaves behind (a module variable, a file) reaches another.

/** A file of a call: a package's module, an attachment, or a file the code wrote. */
export interface SandboxFile {
  /** Relative path, `/`-separated. */
  name: string;
  bytes: Uint8Array;
}

/** What a workflow plugin's `svc` calls do: `complete` and `search`, answered by the service. */
export type SvcHost = (method: string, args: Record<string, unknown>) => Promise<unknown>;

export interface SandboxJob {
  /** The plugin package's files (its modules); empty for the code interpreter. */
  packageFiles: readonly SandboxFile[];
  /** Files in the working directory when the call starts (attachments). */
  workFiles: readonly SandboxFile[];
  /** A plugin's `module:function` called with its argument (and `svc`), or code run as a script. */
  task: { entryPoint: string; argument: unknown; svc?: SvcHost } | { code: string };
  signal?: AbortSignal;
}

export interface SandboxResult {
  /** What the function returned (JSON), or null for code. */
  value: unknown;
  /** Standard output, its first 64 KiB. */
  stdout: string;
  /** Files the call created or changed in its working directory. */
  files: SandboxFile[];
}

export interface SandboxLimits {
  timeoutMs: number;
  memoryBytes: number;
  /** Bytes a call may write to files. */
  scratchBytes: number;
  /** Bytes a call may print. */
  outputBytes: number;
  /** Bytes of written files a call may give back. */
  filesBytes: number;
}

export interface Sandbox {
  /** Runs the job in a fresh interpreter; rejects with PluginFailed naming why (a limit, an exception). */
  run(job: SandboxJob): Promise<SandboxResult>;
  /** Gets interpreters ready ahead of a call that is likely to come. */
  warm(): void;
  close(): Promise<void>;
}

/** A call that failed for a reason of its own: the plugin raised, broke a limit or returned nothing usable. */
export class PluginFailed extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'PluginFailed';
  }
}

/**
 * The runner's answer as a result, or the reason it gives as PluginFailed. The answer is untrusted: checked, bounded.
 */
export function resultOf(answer: string, stdout: string, files: SandboxFile[]): SandboxResult {
  if (answer.length > MAX_RESULT_BYTES) throw returnedTooMuch();
  let parsed: unknown;
  try {
    parsed = JSON.parse(answer);
  } catch {
    throw new PluginFailed('the sandbox answered something that is not JSON');
  }
  const { ok, value, error } = isRecord(parsed) ? parsed : {};
  if (ok !== true) throw new PluginFailed(typeof error === 'string' ? error.slice(0, 2000) : 'the interpreter stopped');
  return { value, stdout: stdout.slice(0, MAX_OUTPUT_CHARS), files };
}

/** Largest value a plugin may return, as JSON (parsing it on the request thread stays within about 15 ms). */
export const MAX_RESULT_BYTES = 256 * 1024;
export const returnedTooMuch = () => new PluginFailed(`the plugin returned more than ${MAX_RESULT_BYTES / 1024} KiB`);
/** Standard output kept for the caller; the rest is counted only. */
export const MAX_OUTPUT_CHARS = 64 * 1024;

/** A JSON object (not an array, not null): what a sandbox's answers and frame headers must be before they are read. */
export const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Files one call may give back. */
export const MAX_FILES = 100;

/**
 * A written file's name as a sandbox may give it: relative, `/`-separated, no empty, `.` or `..` part, no control
 * character.
 */
export function safeName(name: string): boolean {
  return (
    name.length > 0 &&
    name.length <= 1024 &&
    // eslint-disable-next-line no-control-regex
    !/[\\\u0000-\u001f]/.test(name) &&
    name.split('/').every((part) => part !== '' && part !== '.' && part !== '..')
  );
}
