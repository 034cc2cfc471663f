// The agent resource type: its definition, with the writable properties and settings of agent-settings.ts.
import { z } from 'zod';
import { definition, type ResourceKind, type ResourceOf } from './resource-type.js';
import { GatekeeperSettings, WRITABLE_SCALARS, WRITABLE_SETTINGS } from './agent-settings.js';

const { display_name: _d, description: _s, ...scalars } = WRITABLE_SCALARS;

export const AgentDefinition = definition('agent', () => ({
  inline_context: z.boolean().optional(),
  workflow_object_id: z.string().optional(),
  tool_object_ids: z.array(z.string()).optional(),
  workflow_parameters: z
    .record(z.string(), z.unknown())
    .optional()
    .describe("An external workflow's plugin receives these as `parameters`"),
  gatekeeper_settings: GatekeeperSettings.nullable().optional(),
  metadata: z.object({ welcome_message: z.string().nullable().optional() }).strict().optional(),
  virtual_security_group_id: z.string().optional().describe('Set by the service; ignored in requests'),
  owner_user_id: z.string().optional().describe('Changed only through set-properties; ignored here'),
  ...z.object({ ...scalars, ...WRITABLE_SETTINGS }).partial().shape,
}));

export const agents = {
  provider: 'Svc.Agent',
  segment: 'agents',
  type: 'agent',
  schema: AgentDefinition,
  instanceFields: ['virtual_security_group_id', 'owner_user_id'],
} satisfies ResourceKind;

export type AgentDoc = ResourceOf<typeof agents>;
