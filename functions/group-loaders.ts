// The groups of functions/groups.ts, each imported on first use. The deployed Functions bundle
// (functions/bundled-app.ts) registers every function from the table the build wrote beside it, and imports
// a function's group when that function is first called: a new instance evaluates the groups it serves, not
// all of them (`npm run bench -- cold-start`). The same groups as groups.ts (a unit test holds them to it).
import type { QueueHead, RouteHead, TimerHead, HostFunctions } from '../shared/http/azure-host.js';
import type { Route } from '../shared/http/route.js';
import type { QueueHandler } from '../shared/queues/handler.js';
import type { Timer } from '../shared/queues/timer.js';

interface GroupModule {
  routes: readonly Route[];
  queueHandlers?: readonly QueueHandler[];
  timers?: readonly Timer[];
}

const GROUP_LOADERS = {
  status: () => import('./status.js'),
  branding: () => import('./branding.js'),
  agents: () => import('./agents.js'),
  completions: () => import('./completions.js'),
  sessions: () => import('./sessions.js'),
  files: () => import('./files.js'),
  memory: () => import('./memory.js'),
  memoryMcp: () => import('./memory-mcp.js'),
  mcpAgents: () => import('./mcp-agents.js'),
  resources: () => import('./resources.js'),
  dataPipelines: () => import('./data-pipelines.js'),
  agentProperties: () => import('./agent-properties.js'),
  agentTokens: () => import('./agent-tokens.js'),
  identity: () => import('./identity.js'),
  analytics: () => import('./analytics.js'),
  plugins: () => import('./plugins.js'),
  artifactPackages: () => import('./artifact-packages.js'),
  agentTemplates: () => import('./agent-templates.js'),
  evaluations: () => import('./evaluations.js'),
  realtime: () => import('./realtime.js'),
  openai: () => import('./openai.js'),
  a2a: () => import('./a2a.js'),
  portal: () => import('./portal.js'),
  // The OpenAPI documents describe every route: the first call of one loads every group.
  meta: async () => {
    const all: Route[] = [];
    const routes = (await import('./meta.js')).metaRoutes(() => all);
    const others = await Promise.all(GROUPS.filter((g) => g !== 'meta').map(loadGroup));
    all.push(...others.flatMap((m) => m.routes), ...routes);
    return { routes };
  },
} satisfies Record<string, () => Promise<GroupModule>>;

type Group = keyof typeof GROUP_LOADERS;
const isGroup = (name: string): name is Group => Object.hasOwn(GROUP_LOADERS, name);
const GROUPS = Object.keys(GROUP_LOADERS).filter(isGroup);

/** The file beside the deployed bundle that holds its `FunctionTable`, as JSON. */
export const FUNCTION_TABLE = 'functions.json';

/** What registering every function needs, and the group that holds each. */
export interface FunctionTable {
  routes: (RouteHead & { group: Group })[];
  queues: (QueueHead & { group: Group })[];
  timers: (TimerHead & { group: Group })[];
}

const loaded = new Map<Group, Promise<GroupModule>>();
function loadGroup(group: Group): Promise<GroupModule> {
  let module = loaded.get(group);
  if (!module) loaded.set(group, (module = GROUP_LOADERS[group]()));
  return module;
}

/** Every group's functions, in the order of groups.ts (what the build writes beside the bundle). */
export async function functionTable(): Promise<FunctionTable> {
  const table: FunctionTable = { routes: [], queues: [], timers: [] };
  for (const group of GROUPS) {
    const m = await loadGroup(group);
    for (const { name, api, method, path } of m.routes) table.routes.push({ name, api, method, path, group });
    for (const { name, queue } of m.queueHandlers ?? []) table.queues.push({ name, queue, group });
    for (const { name, schedule, standaloneOnly } of m.timers ?? [])
      table.timers.push({ name, schedule, ...(standaloneOnly ? { standaloneOnly } : {}), group });
  }
  return table;
}

/** A row's function, from its group (imported on the first call). */
async function find<K extends 'routes' | 'queueHandlers' | 'timers'>(
  row: { name: string; group: Group },
  kind: K,
): Promise<NonNullable<GroupModule[K]>[number]> {
  const found = (await loadGroup(row.group))[kind]?.find((f) => f.name === row.name);
  if (!found) throw new Error(`${row.name} is not in group ${row.group}: the function table is from another build`);
  return found;
}

/** The functions of a table, each group imported at the first call of one of its functions. */
export const tableFunctions = (
  table: FunctionTable,
): HostFunctions<
  FunctionTable['routes'][number],
  FunctionTable['queues'][number],
  FunctionTable['timers'][number]
> => ({
  ...table,
  route: (row) => find(row, 'routes'),
  queue: (row) => find(row, 'queueHandlers'),
  timer: (row) => find(row, 'timers'),
});
