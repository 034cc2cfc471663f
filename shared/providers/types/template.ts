// The agent template resource type: a parameterised set of resource definitions that create-agent makes true
// (shared/artifacts/templates.ts). `{{parameter}}` in a string is replaced by the parameter's value; a string
// that is only `{{parameter}}` becomes the value itself (an array, a number), and `{{instance_id}}` is this
// instance's id. `agent_name` is always a parameter (a string), declared or not.
import { z } from 'zod';
import { PARAMETER_TYPES } from './parameter-types.js';
import { definition, type ResourceKind, type ResourceOf } from './resource-type.js';

export const TemplateParameter = z
  .object({
    name: z
      .string()
      .regex(
        /^[A-Za-z_][A-Za-z0-9_]{0,63}$/,
        'parameter names are 1 to 64 letters, digits or underscores, not starting with a digit',
      ),
    type: z.enum(PARAMETER_TYPES, { error: `type must be one of ${PARAMETER_TYPES.join(', ')}` }),
    description: z.string().default(''),
    default_value: z.unknown().optional(),
  })
  .strict();

/** One definition of the set: a resource body with its `type`, as its own create would take it. */
const TemplateResource = z.looseObject({ type: z.string().min(1), name: z.string().min(1) });

export const agentTemplates = {
  provider: 'Svc.Agent',
  segment: 'agentTemplates',
  type: 'agent-template',
  schema: definition('agent-template', () => ({
    parameters: z.array(TemplateParameter).max(50).default([]),
    resources: z.array(TemplateResource).min(1).max(100),
  })).superRefine((d, ctx) => {
    const names = d.parameters.map((p) => p.name);
    if (new Set(names).size !== names.length)
      ctx.addIssue({ code: 'custom', path: ['parameters'], message: 'parameter names must not repeat' });
    const agentName = d.parameters.find((p) => p.name === 'agent_name');
    if (agentName && agentName.type !== 'string')
      ctx.addIssue({ code: 'custom', path: ['parameters'], message: 'agent_name is a string' });
  }),
} satisfies ResourceKind;

export type AgentTemplateDoc = ResourceOf<typeof agentTemplates>;
