// Outside Azure there is no Functions worker, and so no `@azure/functions-core`, the one module the worker
// gives an app: without it `@azure/functions` registers nothing. This writes a stand-in that records what
// the app registers (`handlers`, by function name), for a process started with NODE_PATH set to the folder
// returned: the cold-start benchmark and the package test call the registered handlers as the worker would.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

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
