// Agent property actions: read and write named properties and metadata properties of an
// agent, with the allowed and read-only names, the null rules and the owner rule.
import { z } from 'zod';
import type { Principal } from '../auth/principal.js';
import { ROLE_IDS } from '../providers/types/roles.js';
import { DomainError, badRequest, forbidden, notFound } from '../errors.js';
import { partitionOf, resourceId, resourcesOf } from '../providers/types/resource-type.js';
import { authorizeAgentLinks, checkAgentLinks } from './rules/agent-links.js';
import { grant } from './rules/agent.js';
import { writeVersioned } from '../providers/versions.js';
import { WRITABLE_SCALARS, WRITABLE_SETTINGS } from '../providers/types/agent-settings.js';
import { agents, type AgentDoc } from '../providers/types/agent.js';
import type { AgentTokens } from '../auth/agent-tokens.js';
import type { Authorizer } from '../auth/authorizer.js';
import type { GraphOptions } from '../auth/graph.js';
import type { Config } from '../config.js';
import type { ExtractionPool } from '../knowledge/extract-pool.js';
import type { VectorIndex } from '../knowledge/vector-index.js';
import type { Log } from '../log.js';
import type { ModelGateway } from '../models/gateway.js';
import type { CredentialGate } from '../net/credential-gate.js';
import type { Dispatcher } from '../net/undici.js';
import type { PluginPackages } from '../plugins/packages.js';
import type { PluginRuntime } from '../plugins/runtime.js';
import type { ResourceCache } from '../providers/resource-cache.js';
import type { AppSettings } from '../providers/settings.js';
import type { Producer } from '../queues/producer.js';
import type { BlobService } from '../store/storage.js';
import type { DocumentStore } from '../store/types.js';

/** What this module uses of the service (the hosts pass the whole of it). */
export interface AgentPropertiesDeps {
  readonly agentTokens: AgentTokens;
  readonly authorizer: Authorizer;
  readonly blobs: BlobService;
  readonly config: Config;
  readonly extraction: ExtractionPool;
  readonly gate: CredentialGate;
  readonly graph: GraphOptions | undefined;
  readonly log: Log;
  readonly models: ModelGateway;
  readonly packages: PluginPackages;
  readonly plugins: PluginRuntime;
  readonly producer: Producer;
  readonly resourceCache: ResourceCache;
  readonly settings: AppSettings;
  readonly store: DocumentStore;
  readonly userDispatcher: Dispatcher;
  readonly vectors: VectorIndex;
}

export const READ_ONLY_PROPERTIES = [
  'object_id',
  'type',
  'name',
  'created_on',
  'created_by',
  'deleted',
  'workflow',
  'tools',
  'virtual_security_group_id',
] as const;
const READ_ONLY_NAMES: ReadonlySet<string> = new Set(READ_ONLY_PROPERTIES);

/** Writable properties and the schema a new value must meet. */
const WRITABLE = {
  ...WRITABLE_SCALARS,
  ...WRITABLE_SETTINGS,
  updated_on: z.null({ error: 'must be null: the service sets it' }),
  updated_by: z.null({ error: 'must be null: the service sets it' }),
  owner_user_id: z.string({ error: 'cannot be null' }).min(1, 'cannot be empty'),
};
const WritableProperties = z.object(WRITABLE).partial();
export const WRITABLE_PROPERTIES = Object.keys(WRITABLE);
export const METADATA_PROPERTIES = ['welcome_message'] as const;
const METADATA_NAMES: ReadonlySet<string> = new Set(METADATA_PROPERTIES);

const SHOW_FLAGS = new Set([
  'show_message_tokens',
  'show_message_rating',
  'show_view_prompt',
  'show_file_upload',
  'show_content_artifacts',
]);
const SETTINGS = new Set(Object.keys(WRITABLE_SETTINGS));

export const GetPropertiesBody = z
  .object({ property_names: z.array(z.string()).optional(), metadata_property_names: z.array(z.string()).optional() })
  .strict();
export const SetPropertiesBody = z
  .object({
    properties: z.record(z.string(), z.unknown()).optional(),
    metadata_properties: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();

/** The agent (its route has authorized the caller to read or write it). */
async function loadAgent(s: AgentPropertiesDeps, name: string): Promise<AgentDoc> {
  const doc = await resourcesOf(s.store, agents).read(partitionOf(agents), resourceId(name));
  if (!doc || doc.deleted) throw notFound(`Agent ${name} not found`);
  return doc;
}

/** The value of one property as get-properties reports it; undefined when the agent lacks it. */
function propertyValue(agent: AgentDoc, name: string): unknown {
  switch (name) {
    case 'workflow':
      return agent.workflow_object_id !== undefined ? { object_id: agent.workflow_object_id } : null;
    case 'tools':
      return (agent.tool_object_ids ?? []).map((object_id) => ({ object_id }));
    default: {
      // Properties are named by the caller: the agent's fields by name.
      const value: unknown = new Map(Object.entries(agent)).get(name);
      if (SHOW_FLAGS.has(name)) return value ?? true;
      if (SETTINGS.has(name)) return value ?? null;
      return value;
    }
  }
}

export async function getProperties(
  s: AgentPropertiesDeps,
  agentName: string,
  body: z.output<typeof GetPropertiesBody>,
) {
  const names = body.property_names ?? [];
  const metadataNames = body.metadata_property_names ?? [];
  if (names.length + metadataNames.length === 0)
    throw badRequest('Name at least one property in property_names or metadata_property_names');
  const known = new Set<string>([...READ_ONLY_PROPERTIES, ...WRITABLE_PROPERTIES]);
  const invalid = [...names.filter((n) => !known.has(n)), ...metadataNames.filter((n) => !METADATA_NAMES.has(n))];
  if (invalid.length > 0) throw badRequest(`Invalid property names: ${invalid.join(', ')}`);

  const agent = await loadAgent(s, agentName);
  const properties: Record<string, unknown> = {};
  const absent: string[] = [];
  for (const name of names) {
    const value = propertyValue(agent, name);
    if (value === undefined) absent.push(name);
    else properties[name] = value;
  }
  if (absent.length > 0)
    throw new DomainError('internal', 'PropertyNotFound', `The agent has no value for: ${absent.join(', ')}`);
  const metadata = new Map(Object.entries(agent.metadata ?? {}));
  const metadata_properties = Object.fromEntries(metadataNames.map((n) => [n, metadata.get(n) ?? null]));
  return { object_id: agent.object_id, is_success: true, resource: { properties, metadata_properties } };
}

export async function setProperties(
  s: AgentPropertiesDeps,
  principal: Principal,
  { agentName, body }: { agentName: string; body: z.output<typeof SetPropertiesBody> },
) {
  const properties = body.properties ?? {};
  const metadata = body.metadata_properties ?? {};
  if (Object.keys(properties).length + Object.keys(metadata).length === 0) {
    throw badRequest('Give at least one entry in properties or metadata_properties');
  }
  const readOnly = Object.keys(properties).filter((n) => READ_ONLY_NAMES.has(n));
  if (readOnly.length > 0) throw badRequest(`Read-only properties cannot be set: ${readOnly.join(', ')}`);
  const invalidNames = [
    ...Object.keys(properties).filter((n) => !(n in WRITABLE)),
    ...Object.keys(metadata).filter((n) => !METADATA_NAMES.has(n)),
  ];
  if (invalidNames.length > 0) throw badRequest(`Invalid property names: ${invalidNames.join(', ')}`);

  const parsed = WritableProperties.safeParse(properties);
  const problems = parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
  for (const [name, value] of Object.entries(metadata)) {
    if (value !== null && typeof value !== 'string') problems.push(`${name}: must be a string or null`);
  }
  if (!parsed.success || problems.length > 0) throw badRequest(`Invalid property values: ${problems.join('; ')}`);
  // The service sets updated_on and updated_by itself (the caller may only send them as null).
  const { updated_on: _on, updated_by: _by, ...values } = parsed.data;

  const agent = await loadAgent(s, agentName);
  await checkAgentLinks(s, values);
  await authorizeAgentLinks(s, principal, { definition: values, existing: agent });
  const newOwner =
    values.owner_user_id !== undefined && values.owner_user_id !== agent.owner_user_id
      ? values.owner_user_id
      : undefined;
  if (newOwner !== undefined && !(await s.authorizer.hasRole(principal, ROLE_IDS.owner, agent.object_id))) {
    throw forbidden('Changing owner_user_id needs the Owner role on the agent');
  }

  await writeVersioned(s.store, resourcesOf(s.store, agents), {
    pk: agent.pk,
    id: agent.id,
    change: (current) => {
      if (!current || current.deleted) throw notFound(`Agent ${agentName} not found`);
      const next: AgentDoc = { ...current, ...values, updated_on: new Date().toISOString(), updated_by: principal.upn };
      if (Object.keys(metadata).length > 0) {
        const meta = { ...current.metadata };
        // welcome_message is the one metadata property (checked above): a string, or null to remove it.
        const message = metadata.welcome_message;
        if (message === null) delete meta.welcome_message;
        else if (typeof message === 'string') meta.welcome_message = message;
        next.metadata = meta;
      }
      return next;
    },
  });
  s.resourceCache.invalidate(agent.object_id);
  // The new owner holds the Owner role on the agent, as its creator did.
  if (newOwner !== undefined) {
    await grant(
      { services: s, principal, objectId: agent.object_id },
      {
        grantee: { id: newOwner, type: 'User' },
        roleId: ROLE_IDS.owner,
        scope: agent.object_id,
        note: 'Owner of the agent',
      },
    );
  }
  return { object_id: agent.object_id, is_success: true };
}
