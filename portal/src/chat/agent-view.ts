// What an agent's properties say the chat portal shows, read once per agent.
import { answer } from '../api';
import type { Context } from '../shell';
/** What the agent's properties say the portal shows (each true unless set false). */
export interface AgentView {
  show_message_tokens: boolean;
  show_message_rating: boolean;
  show_view_prompt: boolean;
  show_file_upload: boolean;
  show_content_artifacts: boolean;
  welcome_message: string | null;
  /** The agent can be talked to (realtime speech enabled). */
  speech: boolean;
}

export const FLAGS = [
  'show_message_tokens',
  'show_message_rating',
  'show_view_prompt',
  'show_file_upload',
  'show_content_artifacts',
] as const;

export async function agentView({ api }: Context, agent: string): Promise<AgentView> {
  const r = await answer(
    api.management.POST('/providers/Svc.Agent/agents/{agentName}/get-properties', {
      params: { path: { agentName: agent } },
      body: { property_names: [...FLAGS, 'realtime_speech_settings'], metadata_property_names: ['welcome_message'] },
    }),
  ).catch(() => undefined); // no read access to the agent's properties: the defaults
  const p = r?.resource.properties ?? {};
  const welcome = r?.resource.metadata_properties.welcome_message;
  const settings = p.realtime_speech_settings;
  const speech =
    typeof settings === 'object' && settings !== null && 'enabled' in settings && settings.enabled === true;
  return {
    ...(Object.fromEntries(FLAGS.map((f) => [f, p[f] !== false])) as Record<(typeof FLAGS)[number], boolean>),
    welcome_message: typeof welcome === 'string' ? welcome : null,
    speech,
  };
}
