// The one list of every endpoint group and queue handler; both hosts serve exactly this (the deployed
// Functions bundle loads each group on first use: functions/group-loaders.ts).
import type { Route } from '../shared/http/route.js';
import type { QueueHandler } from '../shared/queues/handler.js';
import type { Timer } from '../shared/queues/timer.js';
import type { Upgrade } from '../shared/http/standalone.js';
import * as a2a from './a2a.js';
import * as agentProperties from './agent-properties.js';
import * as agentTemplates from './agent-templates.js';
import * as agentTokens from './agent-tokens.js';
import * as agents from './agents.js';
import * as analytics from './analytics.js';
import * as artifactPackages from './artifact-packages.js';
import * as branding from './branding.js';
import * as completions from './completions.js';
import * as dataPipelines from './data-pipelines.js';
import * as evaluations from './evaluations.js';
import * as files from './files.js';
import * as identity from './identity.js';
import * as memory from './memory.js';
import * as mcpAgents from './mcp-agents.js';
import * as memoryMcp from './memory-mcp.js';
import * as openai from './openai.js';
import * as plugins from './plugins.js';
import * as realtime from './realtime.js';
import * as portal from './portal.js';
import { metaRoutes } from './meta.js';
import * as resources from './resources.js';
import * as sessions from './sessions.js';
import * as status from './status.js';

const groups: readonly (readonly Route[])[] = [
  status.routes,
  branding.routes,
  agents.routes,
  completions.routes,
  sessions.routes,
  files.routes,
  memory.routes,
  memoryMcp.routes,
  mcpAgents.routes,
  resources.routes,
  dataPipelines.routes,
  agentProperties.routes,
  agentTokens.routes,
  identity.routes,
  analytics.routes,
  plugins.routes,
  artifactPackages.routes,
  agentTemplates.routes,
  evaluations.routes,
  realtime.routes,
  openai.routes,
  a2a.routes,
  portal.routes,
];

export const ROUTES: readonly Route[] = [...groups.flat(), ...metaRoutes(() => ROUTES)];

/** WebSocket endpoints: served by the standalone server only (the Functions host holds no WebSocket). */
export const UPGRADES: readonly Upgrade[] = [realtime.relay];

export const QUEUE_HANDLERS: readonly QueueHandler[] = [
  ...completions.queueHandlers,
  ...dataPipelines.queueHandlers,
  ...evaluations.queueHandlers,
];

/** Work on a clock, run where the queue handlers run. */
export const TIMERS: readonly Timer[] = [...dataPipelines.timers];
