// Outside Azure there is no Functions worker, and so no `@azure/functions-core`, the one module the worker
// gives an app: without it `@azure/functions` registers nothing. This writes a stand-in that records what
// the app registers (`handlers`, by function name), for a process started with NODE_PATH set to the folder
// returned: the build (for the code cache), the cold-start benchmark and the package test call the registered
// handlers as the worker would.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { DEFAULT_INSTANCE_ID } from '../shared/config-settings.js';

const STAND_IN = `const handlers = new Map();
module.exports = {
  setProgrammingModel() {},
  registerFunction(metadata, handler) { handlers.set(metadata.name, handler); return { dispose() {} }; },
  registerHook() { return { dispose() {} }; },
  log() {},
  handlers,
};
`;

/** A new folder holding `@azure/functions-core`; give it to the child as NODE_PATH, remove it after. */
export function functionsCoreStandIn(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'functions-core-'));
  mkdirSync(path.join(dir, '@azure', 'functions-core'), { recursive: true });
  writeFileSync(path.join(dir, '@azure', 'functions-core', 'index.js'), STAND_IN);
  return dir;
}

/** The environment of a child that answers a first request with the embedded store in `dataDir`. */
export const firstAnswerEnv = (modules: string, dataDir: string): NodeJS.ProcessEnv => ({
  PATH: process.env.PATH ?? '',
  NODE_PATH: modules,
  DATA_DIR: dataDir,
  SERVICE_APIS: 'core,management',
  LOG_LEVEL: 'warn',
});

/**
 * A child's script (`node --input-type=module -e`): import the Functions entry, then call the status
 * function (`GET /instances/{id}/status`, which creates the services) with a request shaped as the v4
 * model's. Then `then` runs, with `entry` (the import's promise), `handlers` and `ms` (import plus answer).
 */
export const firstAnswerScript = (entry: string, then: string): string => `
import { createRequire } from 'node:module';
const t0 = performance.now();
const entry = import(${JSON.stringify(pathToFileURL(entry).href)});
await entry;
const { handlers } = createRequire(import.meta.url)('@azure/functions-core');
const url = 'http://localhost:7071/instances/${DEFAULT_INSTANCE_ID}/status';
const request = {
  method: 'GET', url, headers: new Headers(), query: new URL(url).searchParams,
  params: { instanceId: '${DEFAULT_INSTANCE_ID}' }, body: null, arrayBuffer: async () => new ArrayBuffer(0),
};
const response = await handlers.get('status-core-instance')(request, { invocationId: 'first-answer', log() {} });
if (response.status !== 200) throw new Error('status answered ' + response.status);
const ms = performance.now() - t0;
${then}
process.exit(0);`;
