// What an agent definition points to must be of the right kind when it is saved: its workflow, its tools, the
// models and prompt of its rewrite and cache settings; and its shielding plugins must be able to run here
// (CONTRACT 10.7). A link to a resource that does not exist yet is accepted, so resources can be created in
// any order (imports, infrastructure as code); using it answers a 400 naming what is missing. A 400
// ValidationError names the first field that does not hold.
import { validationError } from '../../errors.js';
import type { Services } from '../../services.js';
import { checkRunnable } from '../../shielding/plugins.js';
import type { ResourceDoc } from '../resource-type.js';

type Kind = { type: string; check?: (doc: ResourceDoc) => string | undefined };

const KINDS = {
  workflow: { type: 'workflow' },
  tool: { type: 'tool', check: (d) => (d.tool_type === 'plugin' ? 'is a plugin tool, and no plugin runtime here runs package code: agents cannot use it' : undefined) },
  prompt: { type: 'prompt' },
  completionModel: { type: 'ai-model', check: (d) => (d.model_type === 'completion' ? undefined : 'is not a completion model') },
  embeddingModel: { type: 'ai-model', check: (d) => (d.model_type === 'embedding' ? undefined : 'is not an embedding model') },
} satisfies Record<string, Kind>;

/** 400 when the object id names a live resource of another kind. */
export async function checkLink(s: Services, field: string, objectId: unknown, kind: Kind): Promise<void> {
  if (typeof objectId !== 'string') return;
  const doc = await s.resourceCache.get(objectId);
  if (!doc) return;
  const problem = doc.type !== kind.type ? `is a ${doc.type}, not a ${kind.type}` : kind.check?.(doc);
  if (problem) throw validationError([{ field, message: `${objectId} ${problem}` }]);
}

interface AgentLinks {
  workflow_object_id?: unknown;
  tool_object_ids?: unknown;
  text_rewrite_settings?: { user_prompt_rewrite_settings?: { user_prompt_rewrite_ai_model_object_id?: string; user_prompt_rewrite_prompt_object_id?: string } | null } | null;
  cache_settings?: { semantic_cache_settings?: { embedding_ai_model_object_id?: string } | null } | null;
  shielding_settings?: { pre_completion_plugins?: { plugin_name: string }[]; post_completion_plugins?: { plugin_name: string }[] } | null;
}

/** Checks the links a (possibly partial) agent definition carries. */
export async function checkAgentLinks(s: Services, d: AgentLinks): Promise<void> {
  await checkLink(s, 'workflow_object_id', d.workflow_object_id, KINDS.workflow);
  if (Array.isArray(d.tool_object_ids)) for (const [i, id] of d.tool_object_ids.entries()) await checkLink(s, `tool_object_ids[${i}]`, id, KINDS.tool);
  const rewrite = d.text_rewrite_settings?.user_prompt_rewrite_settings;
  await checkLink(s, 'text_rewrite_settings.user_prompt_rewrite_settings.user_prompt_rewrite_ai_model_object_id', rewrite?.user_prompt_rewrite_ai_model_object_id, KINDS.completionModel);
  await checkLink(s, 'text_rewrite_settings.user_prompt_rewrite_settings.user_prompt_rewrite_prompt_object_id', rewrite?.user_prompt_rewrite_prompt_object_id, KINDS.prompt);
  await checkLink(s, 'cache_settings.semantic_cache_settings.embedding_ai_model_object_id', d.cache_settings?.semantic_cache_settings?.embedding_ai_model_object_id, KINDS.embeddingModel);
  const shielding = d.shielding_settings;
  if (shielding) {
    await checkRunnable(s, 'shielding_settings.pre_completion_plugins', (shielding.pre_completion_plugins ?? []).map((p) => p.plugin_name));
    await checkRunnable(s, 'shielding_settings.post_completion_plugins', (shielding.post_completion_plugins ?? []).map((p) => p.plugin_name));
  }
}

/** A workflow's model must be a completion model and its prompt a prompt. */
export async function checkWorkflowLinks(s: Services, d: { main_ai_model_object_id?: unknown; main_prompt_object_id?: unknown }): Promise<void> {
  await checkLink(s, 'main_ai_model_object_id', d.main_ai_model_object_id, KINDS.completionModel);
  await checkLink(s, 'main_prompt_object_id', d.main_prompt_object_id, KINDS.prompt);
}
