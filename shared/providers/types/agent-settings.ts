// The agent settings objects (docs/api-decisions.md, Agents), with their nested rules and defaults. Used by agent
// definitions and by the set-properties action alike.
import { z } from 'zod';

const ObjectId = z.string().min(1);

/** `settings` is valid only when `enabled` is true, and then it is required. */
function onlyWhenEnabled<T extends z.ZodRawShape>(
  shape: T,
  enabledKey: keyof T & string,
  settingsKey: keyof T & string,
) {
  return z
    .object(shape)
    .strict()
    .superRefine((v: Record<string, unknown>, ctx) => {
      const enabled = v[enabledKey] === true;
      const settings = v[settingsKey];
      if (enabled && (settings === undefined || settings === null)) {
        ctx.addIssue({
          code: 'custom',
          path: [settingsKey],
          message: `${settingsKey} is required when ${enabledKey} is true`,
        });
      }
      if (!enabled && settings !== undefined && settings !== null) {
        ctx.addIssue({
          code: 'custom',
          path: [settingsKey],
          message: `${settingsKey} is valid only when ${enabledKey} is true`,
        });
      }
    });
}

export const TextRewriteSettings = onlyWhenEnabled(
  {
    user_prompt_rewrite_enabled: z.boolean().default(false),
    user_prompt_rewrite_settings: z
      .object({
        user_prompt_rewrite_ai_model_object_id: ObjectId,
        user_prompt_rewrite_prompt_object_id: ObjectId,
        user_prompts_window_size: z
          .number()
          .int()
          .min(0)
          .describe('Earlier user prompts of the session the rewrite model reads (0: only the new one)'),
      })
      .strict()
      .nullish(),
  },
  'user_prompt_rewrite_enabled',
  'user_prompt_rewrite_settings',
);

export const CacheSettings = onlyWhenEnabled(
  {
    semantic_cache_enabled: z.boolean().default(false),
    semantic_cache_settings: z
      .object({
        embedding_ai_model_object_id: ObjectId,
        embedding_dimensions: z.number().int().positive().optional(),
        minimum_similarity_threshold: z.number().min(0).max(1).default(0.975),
      })
      .strict()
      .nullish(),
  },
  'semantic_cache_enabled',
  'semantic_cache_settings',
);

export const ConversationHistorySettings = z
  .object({
    enabled: z.boolean(),
    max_history: z.number().int().min(0),
    history_content_artifact_types: z.string().optional(),
  })
  .strict();

const PluginList = z.array(z.object({ plugin_name: z.string().min(1) }).strict());

export const ShieldingSettings = z
  .object({ pre_completion_plugins: PluginList.default([]), post_completion_plugins: PluginList.default([]) })
  .strict();

/** The obsolete predecessor of shielding_settings: accepted on load, used only when shielding_settings is absent. */
export const GatekeeperSettings = z
  .object({ use_system_setting: z.boolean().optional(), options: z.array(z.string()).optional() })
  .strict();

export const RealtimeSpeechSettings = z
  .object({
    enabled: z.boolean().default(false),
    realtime_speech_ai_model_object_id: ObjectId,
    stop_words: z.array(z.string()).default(['stop', 'end conversation', 'goodbye']),
    max_session_duration_seconds: z.number().int().min(0).default(0),
    show_transcriptions: z.boolean().default(true),
    include_conversation_history: z.boolean().default(true),
    voice: z
      .string()
      .regex(/^[a-z0-9_-]{1,40}$/, 'voice is a voice name of the realtime model, such as alloy')
      .optional()
      .describe("The model's voice (default alloy)"),
  })
  .strict();

/** Writable agent properties other than the settings objects, with their schemas. */
export const WRITABLE_SCALARS = {
  display_name: z.string(),
  description: z.string(),
  cost_center: z.string(),
  expiration_date: z.iso.datetime({ offset: true }),
  inheritable_authorizable_actions: z.array(z.string()),
  show_message_tokens: z.boolean().nullable(),
  show_message_rating: z.boolean().nullable(),
  show_view_prompt: z.boolean().nullable(),
  show_file_upload: z.boolean().nullable(),
  show_content_artifacts: z.boolean().nullable(),
} as const;

/** Settings objects: null clears them. */
export const WRITABLE_SETTINGS = {
  text_rewrite_settings: TextRewriteSettings.nullable(),
  cache_settings: CacheSettings.nullable(),
  conversation_history_settings: ConversationHistorySettings.nullable(),
  shielding_settings: ShieldingSettings.nullable(),
  realtime_speech_settings: RealtimeSpeechSettings.nullable(),
} as const;

/**
 * The shielding an agent runs: its shielding_settings, or the obsolete gatekeeper_settings (as
 * pre-completion plugins) only when shielding_settings is absent. Empty lists mean no shielding.
 */
export function effectiveShielding(agent: {
  shielding_settings?: z.output<typeof ShieldingSettings> | null;
  gatekeeper_settings?: z.output<typeof GatekeeperSettings> | null;
}): { pre: string[]; post: string[] } {
  if (agent.shielding_settings !== undefined) {
    const s = agent.shielding_settings;
    return {
      pre: s?.pre_completion_plugins.map((p) => p.plugin_name) ?? [],
      post: s?.post_completion_plugins.map((p) => p.plugin_name) ?? [],
    };
  }
  const options =
    agent.gatekeeper_settings?.use_system_setting === false ? [] : (agent.gatekeeper_settings?.options ?? []);
  return { pre: options, post: options };
}
