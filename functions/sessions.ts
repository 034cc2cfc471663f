// Sessions and messages: every read and write is the caller's own.
import { z } from 'zod';
import { presentCompletionPrompt, presentMessage, presentSession } from '../shared/conversations/conversations.js';
import { Citation } from '../shared/knowledge/retrieval.js';
import { defineRoute } from '../shared/http/route.js';
import { Guid, InstanceParams } from '../shared/schemas.js';
import { pagedJson, pagedResponse, PageQuery } from '../shared/http/paging.js';
import { requirePromptView } from '../shared/providers/agent-access.js';
import { json } from '../shared/http/types.js';

const Session = z
  .object({
    id: z.string(),
    name: z.string(),
    type: z.literal('Session'),
    upn: z.string(),
    messages: z.array(z.unknown()),
    created_on: z.string(),
    updated_on: z.string().optional(),
  })
  .meta({ id: 'Session' });
const Message = z
  .object({
    id: z.string(),
    type: z.literal('Message'),
    session_id: z.string(),
    sender: z.enum(['User', 'Assistant']),
    sender_display_name: z.string(),
    text: z.string(),
    tokens: z.number().int(),
    timestamp: z.string(),
    operation_id: z.string(),
    rating: z.boolean().nullable().optional(),
    rating_comments: z.string().nullable().optional(),
    citations: z
      .array(Citation)
      .optional()
      .describe('Assistant messages: the knowledge the answer was given, as the completion returned it'),
    content_artifacts: z
      .array(
        z.union([
          z
            .object({
              type: z.literal('ToolExecution'),
              tool_name: z.string(),
              function_name: z.string(),
              arguments_sha256: z.string().describe('A digest of the arguments: they are not kept'),
              duration_ms: z.number().int(),
              outcome: z.enum(['Succeeded', 'Failed', 'TimedOut']),
            })
            .meta({ id: 'ToolExecutionArtifact' }),
          z
            .object({
              type: z.literal('File'),
              file_object_id: z.string().describe("The file: an upload of the caller's (GET /files/{fileId}/content)"),
              file_name: z.string(),
              content_type: z.string(),
            })
            .meta({ id: 'FileArtifact' })
            .describe('A file the code interpreter wrote'),
          z.looseObject({ type: z.string() }).describe('Another kind of artifact'),
        ]),
      )
      .optional()
      .describe('Assistant messages: what the turn produced besides its text (tool executions, files)'),
    completion_prompt_id: z
      .string()
      .nullable()
      .optional()
      .describe(
        "Assistant messages: the turn's completion prompt (null when no model was asked: a cache hit or a " +
          'blocked prompt)',
      ),
  })
  .meta({ id: 'Message' });

const CompletionPrompt = z
  .object({
    id: z.string(),
    session_id: z.string(),
    operation_id: z.string(),
    created_on: z.string(),
    messages: z
      .array(
        z
          .object({
            role: z.string(),
            content: z
              .unknown()
              .describe(
                "Text, or content parts (an image part names its attachment's object id instead of repeating " +
                  'its bytes)',
              ),
          })
          .loose(),
      )
      .describe(
        'Exactly what the main model was sent, in order: system prompt, retrieved knowledge, history, ' +
          'attachments and the prompt',
      ),
  })
  .meta({ id: 'CompletionPrompt' });

const SessionParams = InstanceParams.extend({ sessionId: Guid });
const common = { api: 'core', tag: 'Sessions', auth: 'any', errors: 'core' } as const;

const SessionName = z.object({ name: z.string().trim().min(1, 'name must not be empty').max(200) }).strict();

export const routes = [
  defineRoute({
    ...common,
    name: 'sessions-list',
    method: 'GET',
    path: '/instances/{instanceId}/sessions',
    summary: "The caller's sessions, most recently active first",
    params: InstanceParams,
    query: PageQuery,
    responses: { 200: pagedResponse('Sessions', Session) },
    handler: async ({ services, principal, query }) =>
      pagedJson(
        await services.pager.page(principal, {
          list: 'sessions',
          query,
          fetch: (c, n) => services.conversations.list(principal.upn, c, n),
        }),
        (s) => presentSession(s),
      ),
  }),
  defineRoute({
    ...common,
    name: 'sessions-create',
    method: 'POST',
    path: '/instances/{instanceId}/sessions',
    summary: 'Start a session',
    params: InstanceParams,
    body: z
      .object({ name: SessionName.shape.name.default('New Chat') })
      .strict()
      .default({ name: 'New Chat' }),
    responses: { 200: { description: 'The new session (without updated_on)', schema: Session } },
    handler: async ({ services, principal, body }) =>
      json(200, presentSession(await services.conversations.create(principal.upn, body.name), false)),
  }),
  defineRoute({
    ...common,
    name: 'sessions-rename',
    method: 'POST',
    path: '/instances/{instanceId}/sessions/{sessionId}/rename',
    summary: "Rename one of the caller's sessions (an addition to the session API: what the portal's rename calls)",
    params: SessionParams,
    body: SessionName,
    responses: { 200: { description: 'The renamed session', schema: Session } },
    handler: async ({ services, principal, params, body }) =>
      json(200, presentSession(await services.conversations.rename(principal.upn, params.sessionId, body.name))),
  }),
  defineRoute({
    ...common,
    name: 'sessions-messages',
    method: 'GET',
    path: '/instances/{instanceId}/sessions/{sessionId}/messages',
    summary: "Messages of one of the caller's sessions, oldest first",
    params: SessionParams,
    query: PageQuery,
    responses: { 200: pagedResponse('Messages', Message) },
    handler: async ({ services, principal, params, query }) => {
      const list = `messages\n${params.sessionId.toLowerCase()}`;
      return pagedJson(
        await services.pager.page(principal, {
          list,
          query,
          fetch: (c, n) =>
            services.conversations.messagesOf(principal.upn, params.sessionId, { continuation: c, limit: n }),
        }),
        presentMessage,
      );
    },
  }),
  defineRoute({
    ...common,
    name: 'sessions-completion-prompt',
    method: 'GET',
    path: '/instances/{instanceId}/sessions/{sessionId}/completionprompts/{completionPromptId}',
    summary:
      "The prompt one turn sent to the main model (the assistant message's completion_prompt_id); only the " +
      "session's owner may read it, and when the turn's agent does not show its prompts (show_view_prompt " +
      'false) only if they may also write the agent (403 otherwise)',
    params: SessionParams.extend({ completionPromptId: z.string().min(1).max(200) }),
    responses: { 200: { description: 'The completion prompt', schema: CompletionPrompt } },
    handler: async ({ services, principal, params }) => {
      const prompt = await services.conversations.completionPrompt(
        principal.upn,
        params.sessionId,
        params.completionPromptId,
      );
      // The turn's agent (named by the turn's answer) decides whether its prompt is shown.
      const answer = await services.conversations.recordedAnswer(principal.upn, prompt.operation_id);
      if (answer) await requirePromptView(services, principal, answer.agent_name);
      return json(200, presentCompletionPrompt(prompt));
    },
  }),
  defineRoute({
    ...common,
    name: 'sessions-delete',
    method: 'DELETE',
    path: '/instances/{instanceId}/sessions/{sessionId}',
    summary: 'Delete a session and all its messages',
    params: SessionParams,
    responses: { 200: { description: 'Deleted (empty body)' } },
    handler: async ({ services, principal, params }) => {
      await services.conversations.delete(principal.upn, params.sessionId);
      return { status: 200 };
    },
  }),
  defineRoute({
    ...common,
    name: 'sessions-rate-message',
    method: 'POST',
    path: '/instances/{instanceId}/sessions/{sessionId}/message/{messageId}/rate',
    summary: 'Rate an assistant message: thumbs up (true) or down (false), with comments',
    params: SessionParams.extend({ messageId: z.string().min(1).max(200) }),
    body: z
      .object({
        rating: z.boolean({ error: 'rating must be true or false' }),
        comments: z.string().max(4000).optional(),
        share_prompt_with_owner: z
          .boolean()
          .optional()
          .describe(
            "With a thumbs-down: let the agent's owner see this turn's prompt (and the comments), never who " +
              'rated, to make it an evaluation case; rating the message again without it withdraws it',
          ),
      })
      .strict(),
    responses: { 200: { description: 'The rated message', schema: Message } },
    handler: async ({ services, principal, params, body }) => {
      const comments = body.comments ?? null;
      const rated = await services.conversations.rate(principal.upn, {
        sessionId: params.sessionId,
        messageId: params.messageId,
        rating: body.rating,
        comments,
      });
      const shared = !body.rating && body.share_prompt_with_owner === true;
      await services.evaluations.recordRating(principal.upn, rated, {
        shared,
        comments,
        prompt: () => services.conversations.promptOf(principal.upn, rated),
      });
      return json(200, presentMessage(rated));
    },
  }),
];
