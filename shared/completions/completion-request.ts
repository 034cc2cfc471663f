// The wire shapes of a completion: the request as the Core API takes it (with its validation messages), the
// response it answers with, and what a facade (OpenAI, MCP, A2A) adds to a Core request.
import { z } from 'zod';
import { GUID } from '../schemas.js';
import { Citation } from '../knowledge/retrieval.js';
import type { ChatMessage } from '../models/wire.js';

/** The completion request, with its validation messages (the OpenAPI document's CompletionRequest). */
export const CompletionRequest = z
  .object({
    operation_id: z
      .string()
      .regex(/^[A-Za-z0-9._-]{1,100}$/, 'operation_id must be 1 to 100 letters, digits, dots, underscores or hyphens')
      .optional(),
    user_prompt: z
      .string({ error: 'user_prompt is required' })
      .refine((v) => v.trim().length > 0, 'user_prompt is required'),
    session_id: z.string({ error: 'Invalid session_id format' }).regex(GUID, 'Invalid session_id format').optional(),
    agent_name: z.string().min(1, 'Agent not found or access denied').optional(),
    attachments: z.array(z.string().min(1)).max(20, 'at most 20 attachments').optional(),
    background: z
      .boolean()
      .optional()
      .describe('A streamed completion keeps running when the client disconnects, and its events can be replayed'),
    multitask_strategy: z
      .enum(['parallel', 'reject', 'enqueue', 'interrupt'], {
        error: 'multitask_strategy must be parallel, reject, enqueue or interrupt',
      })
      .optional()
      .describe(
        'What happens when another turn of the session is running: parallel (default), reject (409 ' +
          'SessionBusy), enqueue (wait for it), interrupt (cancel it)',
      ),
    settings: z
      .object({
        model_parameters: z
          .object({
            temperature: z
              .number({ error: 'temperature must be between 0 and 1' })
              .min(0, 'temperature must be between 0 and 1')
              .max(1, 'temperature must be between 0 and 1')
              .optional(),
            max_new_tokens: z
              .number({ error: 'max_new_tokens must be positive' })
              .int('max_new_tokens must be positive')
              .positive('max_new_tokens must be positive')
              .optional(),
            top_p: z.number().min(0).max(1).optional(),
          })
          .strict()
          .optional(),
        agent_parameters: z
          .object({
            index_top_n: z.number().int().positive().optional(),
            index_filter_expression: z.string().optional(),
          })
          .strict()
          .optional(),
      })
      .strict()
      .optional(),
  })
  .strict();
export type CompletionRequest = z.output<typeof CompletionRequest>;

export const CompletionResponse = z
  .object({
    operation_id: z.string(),
    user_prompt: z.string(),
    completion: z.string(),
    content: z.array(z.object({ type: z.string(), value: z.string() })),
    citations: z.array(Citation),
    analysis_results: z.array(z.unknown()),
    user_prompt_embedding: z.array(z.number()),
    prompt_tokens: z.number().int(),
    completion_tokens: z.number().int(),
    total_tokens: z.number().int(),
    total_cost: z.number(),
  })
  .meta({ id: 'CompletionResponse' });
export type CompletionResponse = z.output<typeof CompletionResponse>;

/**
 * What a facade adds to a Core request: its protocol (on usage records and telemetry), the earlier messages
 * its client sent (a stateless chat keeps its history itself), and request fields for the model in OpenAI's
 * names (temperature up to 2, `response_format`, `stop`, ...), over the Core request's own parameters.
 */
export interface Facade {
  protocol: 'openai' | 'mcp' | 'a2a';
  history?: ChatMessage[];
  parameters?: Record<string, unknown>;
}
