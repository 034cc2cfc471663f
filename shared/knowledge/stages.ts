// A data pipeline's stages: the built-in Data Pipeline Stage plugins it names, in order, with their
// parameters, checked on save and read into the plan a run follows. Without `stages` a pipeline runs
// extract, partition (by tokens), embed and index with its own settings.
import { validationError } from '../errors.js';
import { builtinCatalogue, builtinPlugin, MARKDOWN_PARTITIONING, STAGES } from '../plugins/builtin.js';
import { checkReference } from '../plugins/references.js';
import type { Stage } from '../providers/types/data-pipelines.js';

export type { Stage };

/** What a run does to each document. */
export interface PipelinePlan {
  partitioner: 'token' | 'markdown';
  sizeTokens: number;
  overlapTokens: number;
  embeddingModel: string;
  embeddingDimensions: number | undefined;
  index: string;
  /** Shielding plugins every partition passes before it is embedded (ShieldStage). */
  shields: string[];
}

export interface PlannedPipeline {
  index_name: string;
  embedding_ai_model_object_id: string;
  embedding_dimensions?: number | undefined;
  partition_size_tokens: number;
  partition_overlap_tokens: number;
  stages?: Stage[] | undefined;
}

/** The order stages run in: each at most once; ShieldStage is the only optional one. */
const ORDER = [STAGES.extract, STAGES.partition, STAGES.shield, STAGES.embed, STAGES.index];
const OPTIONAL = new Set<string>([STAGES.shield]);

/** 400 naming the first stage or parameter that does not hold. */
export function checkStages(stages: readonly Stage[] | undefined): void {
  if (!stages) return;
  const available = new Set(builtinCatalogue().map((p) => p.name));
  let last = -1;
  for (const [i, stage] of stages.entries()) {
    const plugin = builtinPlugin(stage.plugin_name);
    if (!plugin || plugin.category !== 'Data Pipeline Stage') {
      throw validationError([
        {
          field: `stages[${i}].plugin_name`,
          message: `${stage.plugin_name} is not a Data Pipeline Stage plugin (${ORDER.join(', ')})`,
        },
      ]);
    }
    const at = ORDER.indexOf(plugin.name);
    if (at <= last)
      throw validationError([
        {
          field: `stages[${i}].plugin_name`,
          message: `${plugin.name} comes out of order: stages run ${ORDER.join(', ')}, each at most once`,
        },
      ]);
    last = at;
    checkReference(plugin, stage.plugin_parameters, { field: `stages[${i}].plugin_parameters`, available });
  }
  const named = new Set(stages.map((s) => builtinPlugin(s.plugin_name)?.name));
  const missing = ORDER.filter((n) => !OPTIONAL.has(n) && !named.has(n));
  if (missing.length > 0)
    throw validationError([{ field: 'stages', message: `a pipeline's stages include ${missing.join(', ')}` }]);
}

/** 400 when the partition sizes a stage sets do not hold. */
export function checkPlan(plan: PipelinePlan): void {
  const at = (name: string) => `stages.plugin_parameters.${name}`;
  if (plan.sizeTokens < 16 || plan.sizeTokens > 8192)
    throw validationError([
      { field: at('partition_size_tokens'), message: 'partition_size_tokens must be between 16 and 8192' },
    ]);
  if (plan.overlapTokens < 0 || plan.overlapTokens >= plan.sizeTokens)
    throw validationError([
      {
        field: at('partition_overlap_tokens'),
        message: 'partition_overlap_tokens must be at least 0 and less than partition_size_tokens',
      },
    ]);
}

/** The plan of a (saved, so checked) pipeline. */
export function planOf(pipeline: PlannedPipeline): PipelinePlan {
  const parameters = (stage: string): Record<string, unknown> =>
    pipeline.stages?.find((s) => builtinPlugin(s.plugin_name)?.name === stage)?.plugin_parameters ?? {};
  const set = <T>(value: unknown, fallback: T): T => (value === undefined || value === null ? fallback : (value as T));
  const partition = parameters(STAGES.partition);
  const shield = pipeline.stages?.some((s) => builtinPlugin(s.plugin_name)?.name === STAGES.shield)
    ? parameters(STAGES.shield)
    : undefined;
  return {
    partitioner:
      set(partition.partitioner, '').toLowerCase() === MARKDOWN_PARTITIONING.toLowerCase() ? 'markdown' : 'token',
    sizeTokens: set(partition.partition_size_tokens, pipeline.partition_size_tokens),
    overlapTokens: set(partition.partition_overlap_tokens, pipeline.partition_overlap_tokens),
    embeddingModel: pipeline.embedding_ai_model_object_id,
    embeddingDimensions: pipeline.embedding_dimensions,
    index: pipeline.index_name,
    shields: shield
      ? set(shield.shielding_plugins, builtinPlugin(STAGES.shield)?.parameters[0]?.default_value as string[])
      : [],
  };
}
