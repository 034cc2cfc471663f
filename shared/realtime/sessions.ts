// Realtime sessions: a user's permission to talk to one agent through the relay (relay.ts), for one call,
// recorded in the user's own partition beside their conversations. Creating one checks everything a call
// needs (the agent's use, its speech settings, its realtime model) so the relay only has to claim it.
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { ownerKey, type Principal } from '../auth/principal.js';
import { conflict, notFound, validationError } from '../errors.js';
import { pricesOf } from '../models/pricing.js';
import { modelWithEndpoint } from '../models/model-endpoint.js';
import type { EndpointView } from '../models/endpoint.js';
import { agentForUse } from '../providers/agent-access.js';
import type { AgentDoc } from '../providers/types/agent.js';
import type { AiModelDoc } from '../providers/types/catalog.js';
import type { Container, Doc, DocsOf } from '../store/types.js';
import { updateDocument } from '../store/update.js';
import type { Authorizer } from '../auth/authorizer.js';
import type { Budgets } from '../completions/budgets.js';
import type { Quotas } from '../completions/quotas.js';
import type { Config } from '../config.js';
import type { Conversations } from '../conversations/conversations.js';
import type { ResourceCache } from '../providers/resource-cache.js';
import type { DocumentStore } from '../store/types.js';
import { narrowed } from '../store/narrowed.js';

/** What this module uses of the service (the hosts pass the whole of it). */
export interface RealtimeSessionsDeps {
  readonly authorizer: Authorizer;
  readonly budgets: Budgets;
  readonly config: Config;
  readonly conversations: Conversations;
  readonly quotas: Quotas;
  readonly resourceCache: ResourceCache;
  readonly store: DocumentStore;
}

/** How long a realtime session may wait for its call to connect. */
const CONNECT_WITHIN_MS = 5 * 60_000;
const DEFAULT_VOICE = 'alloy';

export const RealtimeSessionRequest = z
  .object({
    agent_name: z.string().min(1, 'agent_name is required'),
    session_id: z
      .string()
      .regex(/^[0-9a-f-]{36}$/i, 'Invalid session_id format')
      .optional(),
  })
  .strict();

export interface RealtimeSessionDoc extends Doc {
  type: 'RealtimeSession';
  upn: string;
  agent_name: string;
  session_id: string;
  created_on: string;
  expires_at: string;
  /** Set when the relay took the call: a realtime session carries one call. */
  connected_on: string | null;
}

declare module '../store/types.js' {
  interface StoredDocs {
    'sessions/realtime': RealtimeSessionDoc;
  }
}

/** Whether a document of the sessions container is a realtime session. */
const isRealtime = (doc: DocsOf<'sessions'>): doc is RealtimeSessionDoc => doc.type === 'RealtimeSession';

/** What the relay needs to place a call: the agent, its model and endpoint, the settings. */
export interface Call {
  realtime: RealtimeSessionDoc;
  agent: AgentDoc;
  model: AiModelDoc;
  endpoint: EndpointView;
  settings: NonNullable<AgentDoc['realtime_speech_settings']>;
}

const container = (s: RealtimeSessionsDeps): Container<RealtimeSessionDoc> =>
  narrowed(s.store.container('sessions'), isRealtime);

/** The agent's speech settings, model and endpoint; 400 naming what is missing. */
async function speechOf(s: RealtimeSessionsDeps, agent: AgentDoc): Promise<Omit<Call, 'realtime' | 'agent'>> {
  const settings = agent.realtime_speech_settings;
  if (!settings?.enabled)
    throw validationError([
      { field: 'agent_name', message: `Agent ${agent.name} does not have realtime speech enabled` },
    ]);
  const resolved = await modelWithEndpoint(s, settings.realtime_speech_ai_model_object_id, 'realtime');
  if (typeof resolved === 'string')
    throw validationError([{ field: 'agent_name', message: `Agent ${agent.name} cannot speak: ${resolved}` }]);
  if (resolved.endpoint.provider !== 'openai' && resolved.endpoint.provider !== 'azure-openai') {
    throw validationError([
      {
        field: 'agent_name',
        message:
          `Agent ${agent.name} cannot speak: its realtime model's API endpoint is not an OpenAI or Azure OpenAI ` +
          `endpoint`,
      },
    ]);
  }
  return { settings, ...resolved };
}

/** A call's longest duration: the agent's setting, within the service's ceiling (its default too). */
export const callLimitSeconds = (s: Pick<RealtimeSessionsDeps, 'config'>, call: Pick<Call, 'settings'>) => {
  const asked = call.settings.max_session_duration_seconds;
  return asked > 0 ? Math.min(asked, s.config.realtimeMaxCallSeconds) : s.config.realtimeMaxCallSeconds;
};

/** Opens a realtime session (and a conversation session when none is named); the relay's address in the answer. */
export async function createRealtimeSession(
  s: RealtimeSessionsDeps,
  principal: Principal,
  { body, relayBase }: { body: z.output<typeof RealtimeSessionRequest>; relayBase: string },
) {
  const agent = await agentForUse(s, principal, body.agent_name);
  const { settings, model } = await speechOf(s, agent);
  // A call is admitted like a completion: refused when a budget in its model's currency is spent, and counted
  // against the agent's quotas (429 when one is spent). Its tokens and cost are counted per response as the
  // call goes, so nothing is held for it meanwhile.
  const budget = await s.budgets.check(principal, agent, () => Promise.resolve(pricesOf(model).currency));
  const { headers: limits, reservation } = await s.quotas.enforce(principal, agent.name);
  await s.quotas.release(reservation);
  const headers = { ...limits, ...budget };
  const session = body.session_id
    ? await s.conversations.get(principal.upn, body.session_id)
    : await s.conversations.create(principal.upn, `Call with ${agent.display_name ?? agent.name}`);
  const now = Date.now();
  const doc: RealtimeSessionDoc = {
    id: randomUUID(),
    pk: ownerKey(principal.upn),
    type: 'RealtimeSession',
    upn: ownerKey(principal.upn),
    agent_name: agent.name,
    session_id: session.id,
    created_on: new Date(now).toISOString(),
    expires_at: new Date(now + CONNECT_WITHIN_MS).toISOString(),
    connected_on: null,
  };
  await container(s).create(doc);
  const answer = {
    realtime_session_id: doc.id,
    session_id: session.id,
    websocket_url: `${relayBase}/instances/${s.config.instanceId}/realtime-sessions/${doc.id}/ws`,
    expires_at: doc.expires_at,
    voice: settings.voice ?? DEFAULT_VOICE,
    stop_words: settings.stop_words,
    max_session_duration_seconds: callLimitSeconds(s, { settings }),
    show_transcriptions: settings.show_transcriptions,
  };
  return { answer, headers };
}

/**
 * Takes the call of a realtime session for its creator: 404 for anyone else's or an unknown one, 409 when
 * its call was taken or it expired. The agent is checked again: access and settings may have changed.
 */
export async function claimCall(
  s: RealtimeSessionsDeps,
  principal: Principal,
  realtimeSessionId: string,
): Promise<Call> {
  const id = realtimeSessionId.toLowerCase();
  const found = await container(s).read(ownerKey(principal.upn), id);
  if (found?.type !== 'RealtimeSession') throw notFound(`Realtime session ${realtimeSessionId} not found`);
  const claimed = await updateDocument(
    container(s),
    { pk: found.pk, id },
    (current) => {
      if (!current) throw notFound(`Realtime session ${realtimeSessionId} not found`);
      if (current.connected_on !== null) throw conflict('This realtime session has had its call; create another');
      if (Date.parse(current.expires_at) <= Date.now())
        throw conflict('This realtime session expired before its call connected; create another');
      return { ...current, connected_on: new Date().toISOString() };
    },
    { known: found },
  );
  if (!claimed) throw notFound(`Realtime session ${realtimeSessionId} not found`);
  const agent = await agentForUse(s, principal, claimed.agent_name);
  return { realtime: claimed, agent, ...(await speechOf(s, agent)) };
}

export const DEFAULT_REALTIME_VOICE = DEFAULT_VOICE;
