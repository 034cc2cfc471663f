// Realtime speech: open a realtime session for a call with an agent. The call itself runs over the relay's
// WebSocket (shared/realtime/relay.ts), served by the standalone server: docs/realtime-speech.md.
import { z } from 'zod';
import { defineRoute } from '../shared/http/route.js';
import { InstanceParams } from '../shared/schemas.js';
import { json } from '../shared/http/types.js';
import { attachRelay } from '../shared/realtime/relay.js';
import { createRealtimeSession, RealtimeSessionRequest } from '../shared/realtime/sessions.js';

const RealtimeSession = z
  .object({
    realtime_session_id: z.string(),
    session_id: z.string().describe('The conversation the transcripts are kept in'),
    websocket_url: z
      .string()
      .describe(
        'The relay: connect within expires_at, with a bearer token (Authorization header, or the subprotocol ' +
          'bearer.<token>)',
      ),
    expires_at: z.string(),
    voice: z.string(),
    stop_words: z.array(z.string()),
    max_session_duration_seconds: z.number().int(),
    show_transcriptions: z.boolean(),
  })
  .meta({ id: 'RealtimeSession' });

export const routes = [
  defineRoute({
    api: 'core',
    tag: 'Realtime speech',
    auth: 'bearer',
    errors: 'core',
    name: 'realtime-sessions-create',
    method: 'POST',
    path: '/instances/{instanceId}/realtime-sessions',
    summary: 'Open a realtime session for a spoken call with an agent whose realtime speech is enabled',
    params: InstanceParams,
    body: RealtimeSessionRequest,
    responses: {
      201: { description: 'The realtime session and where to connect', schema: RealtimeSession },
      400: { description: "The agent's realtime speech is not enabled, or its realtime model cannot be used" },
      429: { description: "A quota of the agent's completions is spent: a call counts as one completion request" },
    },
    handler: async ({ services, principal, body }) => {
      // The relay is this server (its public URL as a socket URL) unless REALTIME_RELAY_URL names another (in Azure:
      // the relay container).
      const base = services.config.realtimeRelayUrl ?? services.config.publicUrls.core.replace(/^http/, 'ws');
      const { answer, headers } = await createRealtimeSession(services, principal, {
        body,
        relayBase: base.replace(/\/$/, ''),
      });
      return json(201, answer, headers);
    },
  }),
];

/** The relay's WebSocket, on the Core API's port. */
export const relay = attachRelay;
