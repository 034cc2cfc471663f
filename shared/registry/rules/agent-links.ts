// What an agent definition points to must be of the right kind when it is saved: its workflow, its tools, the
// models and prompt of its rewrite and cache settings; and its shielding plugins must be able to run here
//. A link to a resource that does not exist yet is accepted, so resources can be created in
// any order (imports, infrastructure as code); using it answers a 400 naming what is missing. A 400
// ValidationError names the first field that does not hold.
import type { Principal } from '../../auth/principal.js';
import { forbidden, validationError } from '../../errors.js';
import { checkRunnable } from '../../shielding/plugins.js';
import { checkReference } from '../../plugins/references.js';
import { isOf, type AnyResource, type ResourceKind } from '../../providers/types/resource-type.js';
import type { AgentDoc } from '../../providers/types/agent.js';
import { aiModels, prompts, tools, workflows, type WorkflowDoc } from '../../providers/types/catalog.js';
import type { Authorizer } from '../../auth/authorizer.js';
import type { Config } from '../../config.js';
import type { ModelGateway } from '../../models/gateway.js';
import type { PluginPackages } from '../../plugins/packages.js';
import type { PluginRuntime } from '../../plugins/runtime.js';
import type { ResourceCache } from '../../providers/resource-cache.js';
import type { AppSettings } from '../../providers/settings.js';

/** What this module uses of the service (the hosts pass the whole of it). */
export interface AgentLinksDeps {
  readonly authorizer: Authorizer;
  readonly config: Config;
  readonly models: ModelGateway;
  readonly packages: PluginPackages;
  readonly plugins: PluginRuntime;
  readonly resourceCache: ResourceCache;
  readonly settings: AppSettings;
}

/** What a link must name: a kind, and what a resource of that kind must be besides. */
type Link = (doc: AnyResource) => string | undefined;

const ofKind =
  (kind: ResourceKind): Link =>
  (doc) =>
    doc.type === kind.type ? undefined : `is a ${doc.type}, not a ${kind.type}`;

const LINKS = {
  workflow: ofKind(workflows),
  tool: ofKind(tools),
  pluginTool: (doc) =>
    isOf(doc, tools) && doc.tool_type === 'plugin' && doc.plugin_object_id === undefined
      ? 'is a plugin tool without a plugin_object_id: it has nothing to run'
      : undefined,
  prompt: ofKind(prompts),
  completionModel: (doc) =>
    !isOf(doc, aiModels)
      ? `is a ${doc.type}, not a ${aiModels.type}`
      : doc.model_type === 'completion'
        ? undefined
        : 'is not a completion model',
  embeddingModel: (doc) =>
    !isOf(doc, aiModels)
      ? `is a ${doc.type}, not a ${aiModels.type}`
      : doc.model_type === 'embedding'
        ? undefined
        : 'is not an embedding model',
  realtimeModel: (doc) =>
    !isOf(doc, aiModels)
      ? `is a ${doc.type}, not a ${aiModels.type}`
      : doc.model_type === 'realtime'
        ? undefined
        : 'is not a realtime model',
} satisfies Record<string, Link>;

/** 400 when the object id (given in `field`) names a live resource of another kind. */
export async function checkLink(
  s: AgentLinksDeps,
  link: Link,
  { field, objectId }: { field: string; objectId: string | undefined },
): Promise<void> {
  if (objectId === undefined) return;
  const doc = await s.resourceCache.get(objectId);
  const problem = doc && link(doc);
  if (problem) throw validationError([{ field, message: `${objectId} ${problem}` }]);
}

export type AgentLinks = Partial<
  Pick<
    AgentDoc,
    | 'workflow_object_id'
    | 'workflow_parameters'
    | 'tool_object_ids'
    | 'text_rewrite_settings'
    | 'cache_settings'
    | 'shielding_settings'
    | 'realtime_speech_settings'
  >
>;

/** Checks the links a (possibly partial) agent definition carries. */
export async function checkAgentLinks(s: AgentLinksDeps, d: AgentLinks): Promise<void> {
  await checkLink(s, LINKS.workflow, { field: 'workflow_object_id', objectId: d.workflow_object_id });
  await checkWorkflowParameters(s, d);
  for (const [i, id] of (d.tool_object_ids ?? []).entries()) {
    await checkLink(s, LINKS.tool, { field: `tool_object_ids[${i}]`, objectId: id });
    await checkLink(s, LINKS.pluginTool, { field: `tool_object_ids[${i}]`, objectId: id });
    await checkToolPlugin(s, `tool_object_ids[${i}]`, id);
  }
  const rewrite = d.text_rewrite_settings?.user_prompt_rewrite_settings;
  await checkLink(s, LINKS.completionModel, {
    field: 'text_rewrite_settings.user_prompt_rewrite_settings.user_prompt_rewrite_ai_model_object_id',
    objectId: rewrite?.user_prompt_rewrite_ai_model_object_id,
  });
  await checkLink(s, LINKS.prompt, {
    field: 'text_rewrite_settings.user_prompt_rewrite_settings.user_prompt_rewrite_prompt_object_id',
    objectId: rewrite?.user_prompt_rewrite_prompt_object_id,
  });
  await checkLink(s, LINKS.embeddingModel, {
    field: 'cache_settings.semantic_cache_settings.embedding_ai_model_object_id',
    objectId: d.cache_settings?.semantic_cache_settings?.embedding_ai_model_object_id,
  });
  await checkLink(s, LINKS.realtimeModel, {
    field: 'realtime_speech_settings.realtime_speech_ai_model_object_id',
    objectId: d.realtime_speech_settings?.realtime_speech_ai_model_object_id,
  });
  const shielding = d.shielding_settings;
  if (shielding) {
    await checkRunnable(
      s,
      'shielding_settings.pre_completion_plugins',
      shielding.pre_completion_plugins.map((p) => p.plugin_name),
    );
    await checkRunnable(
      s,
      'shielding_settings.post_completion_plugins',
      shielding.post_completion_plugins.map((p) => p.plugin_name),
    );
  }
}

/** An object id of a resource: its provider path, whose `read` action a principal needs to name it. */
const RESOURCE_ID = /^\/instances\/([^/]+)\/providers\/(svc\.[a-z]+\/[a-z]+)\/[^/]+$/i;

/** Every resource an agent definition names, by the field that names it. */
function namedResources(d: AgentLinks): [string, string][] {
  const rewrite = d.text_rewrite_settings?.user_prompt_rewrite_settings;
  const named: [string, string | undefined][] = [
    ['workflow_object_id', d.workflow_object_id],
    ...(d.tool_object_ids ?? []).map((id, i): [string, string] => [`tool_object_ids[${i}]`, id]),
    [
      'text_rewrite_settings.user_prompt_rewrite_settings.user_prompt_rewrite_ai_model_object_id',
      rewrite?.user_prompt_rewrite_ai_model_object_id,
    ],
    [
      'text_rewrite_settings.user_prompt_rewrite_settings.user_prompt_rewrite_prompt_object_id',
      rewrite?.user_prompt_rewrite_prompt_object_id,
    ],
    [
      'cache_settings.semantic_cache_settings.embedding_ai_model_object_id',
      d.cache_settings?.semantic_cache_settings?.embedding_ai_model_object_id,
    ],
    [
      'realtime_speech_settings.realtime_speech_ai_model_object_id',
      d.realtime_speech_settings?.realtime_speech_ai_model_object_id,
    ],
    // A workflow plugin's parameters may name resources it then uses (a model for svc.complete).
    ...Object.entries(d.workflow_parameters ?? {}).map(([k, v]): [string, string | undefined] => [
      `workflow_parameters.${k}`,
      typeof v === 'string' && RESOURCE_ID.test(v) ? v : undefined,
    ]),
  ];
  return named.filter((n): n is [string, string] => n[1] !== undefined);
}

/**
 * An agent names only what its writer may read: each resource the definition names that the stored agent
 * did not (a tool, a model, a workflow) needs the writer's `read` on it, or the save is refused (403). So
 * a Contributor of one agent cannot borrow another's knowledge tool or model for it, and what the agent
 * then reads for its callers stays within what someone who may read it gave it.
 */
export async function authorizeAgentLinks(
  s: AgentLinksDeps,
  principal: Principal,
  { definition: d, existing }: { definition: AgentLinks; existing: AgentLinks | undefined },
): Promise<void> {
  const before = new Set(existing ? namedResources(existing).map(([, id]) => id.toLowerCase()) : []);
  for (const [field, objectId] of namedResources(d)) {
    if (before.has(objectId.toLowerCase())) continue;
    const [, instance, path] = RESOURCE_ID.exec(objectId) ?? [];
    // Another instance's resource is nothing this one reads (the link answers 400 when used).
    if (path === undefined || instance?.toLowerCase() !== s.config.instanceId) continue;
    if (!(await s.authorizer.can(principal, `${path}/read`, objectId)))
      throw forbidden(`${field}: you may not read ${objectId}, so an agent you write cannot name it`);
  }
}

/** A workflow's model must be a completion model and its prompt a prompt. */
export async function checkWorkflowLinks(
  s: AgentLinksDeps,
  d: Pick<WorkflowDoc, 'main_ai_model_object_id' | 'main_prompt_object_id'>,
): Promise<void> {
  await checkLink(s, LINKS.completionModel, { field: 'main_ai_model_object_id', objectId: d.main_ai_model_object_id });
  await checkLink(s, LINKS.prompt, { field: 'main_prompt_object_id', objectId: d.main_prompt_object_id });
}

/** An external workflow's plugin gets the agent's workflow_parameters: they must be the ones it declares. */
async function checkWorkflowParameters(s: AgentLinksDeps, d: AgentLinks): Promise<void> {
  const workflow =
    d.workflow_object_id !== undefined ? await s.resourceCache.get(d.workflow_object_id, workflows) : undefined;
  if (workflow?.workflow_type !== 'external') {
    if (d.workflow_parameters !== undefined && workflow)
      throw validationError([
        { field: 'workflow_parameters', message: 'valid only with an external workflow (a workflow plugin)' },
      ]);
    return;
  }
  // A plugin removed since its workflow was saved is the completion's 400 to report, not this save's.
  const plugin = await s.plugins
    .runnable(workflow.plugin_object_id, 'agent workflow', 'workflow_object_id')
    .catch(() => undefined);
  if (!plugin) return;
  const available = new Set((await s.packages.plugins()).map((p) => p.name));
  checkReference(
    { name: plugin.name, parameters: plugin.manifest.parameters, dependencies: plugin.manifest.dependencies },
    d.workflow_parameters ?? {},
    { field: 'workflow_parameters', available },
  );
}

/** A plugin tool's plugin, when installed, can run here (a Dotnet plugin cannot: no .NET runtime). */
async function checkToolPlugin(s: AgentLinksDeps, field: string, objectId: string): Promise<void> {
  const tool = await s.resourceCache.get(objectId, tools);
  if (tool?.tool_type !== 'plugin' || tool.plugin_object_id === undefined) return;
  await s.plugins.lookup(tool.plugin_object_id, 'agent tool', field);
}
