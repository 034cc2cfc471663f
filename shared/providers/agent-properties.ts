// Agent property actions (spec 4.4, 2.12): read and write named properties and metadata properties of an
// agent, with the allowed and read-only names, the null rules and the owner rule.
import { z } from 'zod';
import type { Principal } from '../auth/principal.js';
import { ROLE_IDS } from '../auth/roles.js';
import { DomainError, badRequest, forbidden, notFound } from '../errors.js';
import type { Services } from '../services.js';
import { updateDocument } from '../store/update.js';
import { objectIdOf, partitionOf, resourceId, type ResourceDoc } from './resource-type.js';
import { WRITABLE_SCALARS, WRITABLE_SETTINGS } from './types/agent-settings.js';
import { checkAgentLinks } from './types/agent-links.js';
import { agents, grant } from './types/agent.js';

export const READ_ONLY_PROPERTIES = ['object_id', 'type', 'name', 'created_on', 'created_by', 'deleted', 'workflow', 'tools', 'virtual_security_group_id'] as const;

/** Writable properties and the schema a new value must meet. */
const WRITABLE: Record<string, z.ZodType> = {
  ...WRITABLE_SCALARS,
  ...WRITABLE_SETTINGS,
  updated_on: z.null({ error: 'must be null: the service sets it' }),
  updated_by: z.null({ error: 'must be null: the service sets it' }),
  owner_user_id: z.string({ error: 'cannot be null' }).min(1, 'cannot be empty'),
};
export const WRITABLE_PROPERTIES = Object.keys(WRITABLE);
export const METADATA_PROPERTIES = ['welcome_message'] as const;

const SHOW_FLAGS = new Set(['show_message_tokens', 'show_message_rating', 'show_view_prompt', 'show_file_upload', 'show_content_artifacts']);
const SETTINGS = new Set(Object.keys(WRITABLE_SETTINGS));

export const GetPropertiesBody = z
  .object({ property_names: z.array(z.string()).optional(), metadata_property_names: z.array(z.string()).optional() })
  .strict();
export const SetPropertiesBody = z
  .object({ properties: z.record(z.string(), z.unknown()).optional(), metadata_properties: z.record(z.string(), z.unknown()).optional() })
  .strict();

async function loadAgent(s: Services, principal: Principal, name: string, action: 'read' | 'write'): Promise<ResourceDoc> {
  const objectId = objectIdOf(s.config.instanceId, agents, name);
  if (!(await s.authorizer.can(principal, `Svc.Agent/agents/${action}`, objectId))) throw forbidden(`Not permitted to ${action} agent ${name}`);
  const doc = await s.store.container<ResourceDoc>('resources').read(partitionOf(agents), resourceId(name));
  if (!doc || doc.deleted) throw notFound(`Agent ${name} not found`);
  return doc;
}

/** The value of one property as get-properties reports it; undefined when the agent lacks it. */
function propertyValue(agent: ResourceDoc, name: string): unknown {
  switch (name) {
    case 'workflow':
      return typeof agent.workflow_object_id === 'string' ? { object_id: agent.workflow_object_id } : null;
    case 'tools':
      return Array.isArray(agent.tool_object_ids) ? agent.tool_object_ids.map((object_id: unknown) => ({ object_id })) : [];
    default:
      if (SHOW_FLAGS.has(name)) return agent[name] ?? true;
      if (SETTINGS.has(name)) return agent[name] ?? null;
      return agent[name];
  }
}

export async function getProperties(s: Services, principal: Principal, agentName: string, body: z.output<typeof GetPropertiesBody>) {
  const names = body.property_names ?? [];
  const metadataNames = body.metadata_property_names ?? [];
  if (names.length + metadataNames.length === 0) throw badRequest('Name at least one property in property_names or metadata_property_names');
  const known = new Set<string>([...READ_ONLY_PROPERTIES, ...WRITABLE_PROPERTIES]);
  const invalid = [...names.filter((n) => !known.has(n)), ...metadataNames.filter((n) => !(METADATA_PROPERTIES as readonly string[]).includes(n))];
  if (invalid.length > 0) throw badRequest(`Invalid property names: ${invalid.join(', ')}`);

  const agent = await loadAgent(s, principal, agentName, 'read');
  const properties: Record<string, unknown> = {};
  const absent: string[] = [];
  for (const name of names) {
    const value = propertyValue(agent, name);
    if (value === undefined) absent.push(name);
    else properties[name] = value;
  }
  if (absent.length > 0) throw new DomainError('internal', 'PropertyNotFound', `The agent has no value for: ${absent.join(', ')}`);
  const metadata = (agent.metadata ?? {}) as Record<string, unknown>;
  const metadata_properties = Object.fromEntries(metadataNames.map((n) => [n, metadata[n] ?? null]));
  return { object_id: agent.object_id, is_success: true, resource: { properties, metadata_properties } };
}

export async function setProperties(s: Services, principal: Principal, agentName: string, body: z.output<typeof SetPropertiesBody>) {
  const properties = body.properties ?? {};
  const metadata = body.metadata_properties ?? {};
  if (Object.keys(properties).length + Object.keys(metadata).length === 0) {
    throw badRequest('Give at least one entry in properties or metadata_properties');
  }
  const readOnly = Object.keys(properties).filter((n) => (READ_ONLY_PROPERTIES as readonly string[]).includes(n));
  if (readOnly.length > 0) throw badRequest(`Read-only properties cannot be set: ${readOnly.join(', ')}`);
  const invalidNames = [
    ...Object.keys(properties).filter((n) => !(n in WRITABLE)),
    ...Object.keys(metadata).filter((n) => !(METADATA_PROPERTIES as readonly string[]).includes(n)),
  ];
  if (invalidNames.length > 0) throw badRequest(`Invalid property names: ${invalidNames.join(', ')}`);

  const values: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const [name, value] of Object.entries(properties)) {
    const parsed = (WRITABLE[name] as z.ZodType).safeParse(value);
    if (parsed.success) values[name] = parsed.data;
    else problems.push(...parsed.error.issues.map((i) => `${[name, ...i.path].join('.')}: ${i.message}`));
  }
  for (const [name, value] of Object.entries(metadata)) {
    if (value !== null && typeof value !== 'string') problems.push(`${name}: must be a string or null`);
  }
  if (problems.length > 0) throw badRequest(`Invalid property values: ${problems.join('; ')}`);

  const agent = await loadAgent(s, principal, agentName, 'write');
  await checkAgentLinks(s, values);
  const newOwner = typeof values.owner_user_id === 'string' && values.owner_user_id !== agent.owner_user_id ? values.owner_user_id : undefined;
  if (newOwner !== undefined && !(await s.authorizer.hasRole(principal, ROLE_IDS.owner, agent.object_id))) {
    throw forbidden('Changing owner_user_id needs the Owner role on the agent');
  }

  await updateDocument(s.store.container<ResourceDoc>('resources'), agent.pk, agent.id, (current) => {
    if (!current || current.deleted) throw notFound(`Agent ${agentName} not found`);
    const next: ResourceDoc = { ...current };
    for (const [name, value] of Object.entries(values)) {
      if (name === 'updated_on' || name === 'updated_by') continue;
      // owner_user_id is applied only when it differs from the current value.
      if (name === 'owner_user_id' && value === current.owner_user_id) continue;
      next[name] = value;
    }
    if (Object.keys(metadata).length > 0) {
      const meta = { ...((current.metadata ?? {}) as Record<string, unknown>) };
      for (const [name, value] of Object.entries(metadata)) {
        if (value === null) Reflect.deleteProperty(meta, name);
        else meta[name] = value;
      }
      next.metadata = meta;
    }
    next.updated_on = new Date().toISOString();
    next.updated_by = principal.upn;
    return next;
  });
  s.resourceCache.invalidate(agent.object_id);
  // The new owner holds the Owner role on the agent, as its creator did.
  if (newOwner !== undefined) {
    await grant({ services: s, principal, objectId: agent.object_id }, { id: newOwner, type: 'User' }, ROLE_IDS.owner, agent.object_id, 'Owner of the agent');
  }
  return { object_id: agent.object_id, is_success: true };
}
