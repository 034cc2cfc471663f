// The deployed Functions app (dist/azure/app.cjs, started by functions/bundle-entry.ts): the same functions
// as app.ts, registered from the table the build wrote beside the bundle (FUNCTION_TABLE). Each group is
// imported at the first call of one of its functions, so a new instance evaluates only what it serves.
import { readFileSync } from 'node:fs';
import { registerHost } from '../shared/http/azure-host.js';
import { FUNCTION_TABLE, tableFunctions, type FunctionTable } from './group-loaders.js';
import { openApp } from './open-app.js';

export async function startApp(): Promise<void> {
  const { config, services } = await openApp();
  const table = JSON.parse(readFileSync(new URL(FUNCTION_TABLE, import.meta.url), 'utf8')) as FunctionTable;
  registerHost(tableFunctions(table), { config, services });
}
