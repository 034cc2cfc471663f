// zod building blocks shared by route definitions and the features that check the same shapes (ids, the API version,
// error bodies).
import { z } from 'zod';

export const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const Guid = z.string().regex(GUID, 'must be a GUID');

/** Path parameters of every `/instances/{instanceId}/...` route (the pipeline checks the value). */
export const InstanceParams = z.object({ instanceId: z.string() });
export type InstanceParams = z.infer<typeof InstanceParams>;

/** The api-version query parameter of the plugin and analytics endpoints. */
export const API_VERSION = '2024-02-16';
export const ApiVersionQuery = z.object({
  'api-version': z
    .literal(API_VERSION, { error: `api-version must be ${API_VERSION}` })
    .describe(`Must be ${API_VERSION}`),
});

export const CoreErrorBody = z
  .object({
    error: z.object({
      code: z.string(),
      message: z.string(),
      details: z.array(z.object({ field: z.string(), message: z.string() })).optional(),
    }),
  })
  .meta({ id: 'CoreError' });

export const ManagementErrorBody = z
  .object({ error: z.object({ code: z.string(), message: z.string() }) })
  .meta({ id: 'ManagementError' });

export const ProblemDetailsBody = z
  .object({ type: z.string(), title: z.string(), status: z.number().int(), detail: z.string(), instance: z.string() })
  .meta({ id: 'ProblemDetails' });
