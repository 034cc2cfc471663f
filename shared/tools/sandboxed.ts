// The functions of tools that run in the Python sandbox: an agent tool plugin (named by the plugin's short
// name, its JSON schema from the plugin's declared parameters) and the code interpreter (`python`, with the
// completion's attachments in its working directory; the files it writes become the caller's uploads and
// `File` content artifacts of the answer).
import { Readable } from 'node:stream';
import type { Principal } from '../auth/principal.js';
import { detectContentType, type FileDoc } from '../files/files.js';
import type { ToolDefinition } from '../models/wire.js';
import type { PluginManifest, RunnablePlugin } from '../plugins/runtime.js';
import { PluginFailed, type SandboxFile } from '../sandbox/sandbox.js';
import type { Files } from '../files/files.js';
import type { PluginRuntime } from '../plugins/runtime.js';

/** What this module uses of the service (the hosts pass the whole of it). */
export interface SandboxedDeps {
  readonly files: Files;
  readonly plugins: PluginRuntime;
}

/** Characters of the code interpreter's standard output the model is given. */
export const CODE_OUTPUT_CHARS = 20_000;

/** A File content artifact: a file the code interpreter wrote, kept as the caller's upload. */
export interface FileArtifact {
  type: 'File';
  file_object_id: string;
  file_name: string;
  content_type: string;
}

type Parameter = PluginManifest['parameters'][number];

const JSON_TYPES: Record<Parameter['type'], Record<string, unknown>> = {
  string: { type: 'string' },
  int: { type: 'integer' },
  float: { type: 'number' },
  bool: { type: 'boolean' },
  datetime: { type: 'string', format: 'date-time' },
  array: { type: 'array' },
  'resource-object-id': { type: 'string' },
};

/** The JSON schema of a plugin's declared parameters: a parameter without a default is required. */
export function parametersSchema(parameters: readonly Parameter[]): Record<string, unknown> {
  return {
    type: 'object',
    properties: Object.fromEntries(
      parameters.map((p) => [
        p.name,
        {
          ...JSON_TYPES[p.type],
          ...(p.description ? { description: p.description } : {}),
          ...(p.default_value !== undefined ? { default: p.default_value } : {}),
        },
      ]),
    ),
    required: parameters.filter((p) => p.default_value === undefined).map((p) => p.name),
    additionalProperties: false,
  };
}

export interface SandboxedFunction {
  definition: ToolDefinition;
  run(args: Record<string, unknown>, signal: AbortSignal): Promise<{ text: string; isError: boolean }>;
}

/** What a plugin's answer says to the model: a string as it is, anything else as JSON. */
const asText = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value));

/** A failure the model reads (`Error: <reason>` in the loop); anything else is the loop's to report. */
async function failing(run: () => Promise<string>): Promise<{ text: string; isError: boolean }> {
  try {
    return { text: await run(), isError: false };
  } catch (e) {
    if (e instanceof PluginFailed) return { text: e.reason, isError: true };
    throw e;
  }
}

/** A plugin as a function the model may call: its name there, and a description when the manifest has none. */
export function pluginFunction(
  s: SandboxedDeps,
  plugin: RunnablePlugin,
  { name, description }: { name: string; description: string },
): SandboxedFunction {
  const declared = plugin.manifest.parameters;
  return {
    definition: {
      type: 'function',
      function: {
        name,
        description: plugin.manifest.description || description || plugin.name,
        parameters: parametersSchema(declared),
      },
    },
    run: (args, signal) =>
      failing(async () => {
        const unknown = Object.keys(args).find((k) => !declared.some((p) => p.name === k));
        if (unknown !== undefined) throw new PluginFailed(`${unknown} is not a parameter of ${plugin.name}`);
        const withDefaults = {
          ...Object.fromEntries(
            declared.filter((p) => p.default_value !== undefined).map((p) => [p.name, p.default_value]),
          ),
          ...args,
        };
        return asText((await s.plugins.call(plugin, withDefaults, { signal })).value);
      }),
  };
}

export interface CodeRun {
  user: Principal;
  agentName: string;
  sessionId: string | undefined;
  attachments: readonly FileDoc[];
  /** Where the files the code writes are noted for the answer. */
  artifacts: FileArtifact[];
}

export function codeInterpreterFunction(s: SandboxedDeps, run: CodeRun): SandboxedFunction {
  let inputs: Promise<SandboxFile[]> | undefined;
  return {
    definition: {
      type: 'function',
      function: {
        name: 'python',
        description:
          'Runs Python 3 code (the standard library only, no network) and returns what it prints. The ' +
          'attached files are in the working directory; files the code writes there are given to the user.',
        parameters: {
          type: 'object',
          properties: { code: { type: 'string', description: 'The Python code to run' } },
          required: ['code'],
          additionalProperties: false,
        },
      },
    },
    run: (args, signal) =>
      failing(async () => {
        if (typeof args.code !== 'string' || args.code.trim() === '')
          throw new PluginFailed('code must be a non-empty string');
        inputs ??= attachmentFiles(s, run);
        const result = await s.plugins.sandbox.run({
          packageFiles: [],
          workFiles: await inputs,
          task: { code: args.code },
          signal,
        });
        const saved = await Promise.all(result.files.map((f) => saveOutput(s, run, f)));
        run.artifacts.push(...saved);
        const output =
          result.stdout.length > CODE_OUTPUT_CHARS
            ? `${result.stdout.slice(0, CODE_OUTPUT_CHARS)}\n[cut: the output was ${result.stdout.length} characters]`
            : result.stdout;
        const files =
          saved.length > 0 ? `\nFiles written (given to the user): ${saved.map((f) => f.file_name).join(', ')}` : '';
        return `${output}${files}` || '(no output)';
      }),
  };
}

/** The completion's attachments by their file names (a repeated name gets a numbered prefix). */
async function attachmentFiles(s: SandboxedDeps, run: CodeRun): Promise<SandboxFile[]> {
  const taken = new Set<string>();
  return Promise.all(
    run.attachments.map(async (file, i) => {
      const base = file.display_name.replace(/[/\\]/g, '_') || `attachment-${i + 1}`;
      const name = taken.has(base) ? `${i + 1}-${base}` : base;
      taken.add(name);
      return { name, bytes: new Uint8Array(await s.files.bytesOf(file)) };
    }),
  );
}

async function saveOutput(s: SandboxedDeps, run: CodeRun, file: SandboxFile): Promise<FileArtifact> {
  const fileName = file.name.split('/').pop() || 'output';
  const stored = await s.files.store(Readable.from([Buffer.from(file.bytes)]), fileName, run.user.upn);
  const contentType = await detectContentType(stored.head, fileName, undefined);
  const doc = await s.files.save({
    owner: run.user.upn,
    stored,
    fileName,
    contentType,
    agentName: run.agentName,
    sessionId: run.sessionId ?? null,
  });
  return { type: 'File', file_object_id: doc.object_id, file_name: fileName, content_type: contentType };
}
