// The configured model parameters of an AI model as Chat Completions request fields.
import { WIRE_NAMES, type ModelParametersFields } from '../providers/types/model-fields.js';

export type { ModelParametersFields };

/** The configured parameters, overridden by the request's, as request fields. */
export function wireParameters(
  configured: ModelParametersFields | undefined,
  overrides: { temperature?: number; max_new_tokens?: number; top_p?: number } = {},
): Record<string, unknown> {
  const { extra_body: extra, ...named } = configured ?? {};
  const wire: Record<string, unknown> = { ...extra };
  for (const [field, value] of Object.entries(named)) wire[WIRE_NAMES[field] ?? field] = value;
  for (const [field, value] of Object.entries(overrides)) wire[WIRE_NAMES[field] ?? field] = value;
  return wire;
}
