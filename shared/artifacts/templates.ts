// create-agent: an agent template's resources made true with the caller's parameters. Every parameter is
// checked by its declared type, every definition by its own type and every link found, before anything is
// created; then the whole set is created through the resource provider, so the caller becomes Owner of the
// new agent as any creator of an agent does.
import type { Principal } from '../auth/principal.js';
import { notFound, validationError } from '../errors.js';
import { TYPE_CHECKS } from '../providers/types/parameter-types.js';
import { servedType } from '../registry/registry.js';
import { isOf, ResourceName } from '../providers/types/resource-type.js';
import { readResource } from '../providers/resources.js';
import { agentTemplates, type AgentTemplateDoc } from '../providers/types/template.js';
import { applyPlan, mapDefinitionStrings, planChanges, typeOf, type Incoming } from './resource-set.js';
import type { AgentTokens } from '../auth/agent-tokens.js';
import type { Authorizer } from '../auth/authorizer.js';
import type { GraphOptions } from '../auth/graph.js';
import type { Config } from '../config.js';
import type { Pager } from '../http/paging.js';
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
export interface TemplatesDeps {
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
  readonly pager: Pager;
  readonly plugins: PluginRuntime;
  readonly producer: Producer;
  readonly resourceCache: ResourceCache;
  readonly settings: AppSettings;
  readonly store: DocumentStore;
  readonly userDispatcher: Dispatcher;
  readonly vectors: VectorIndex;
}

/** The parameter every template has: the new agent's name. */
const AGENT_NAME: AgentTemplateDoc['parameters'][number] = {
  name: 'agent_name',
  type: 'string',
  description: 'The name of the new agent',
};

const PLACEHOLDER = /\{\{([A-Za-z_][A-Za-z0-9_]*)\}\}/g;

/**
 * The parameters' values: each given one of its declared type, each absent one its default. 400 names the first that
 * fails.
 */
function parameterValues(template: AgentTemplateDoc, given: Record<string, unknown>): Map<string, unknown> {
  const fail = (name: string, message: string) => validationError([{ field: `parameters.${name}`, message }]);
  const values = new Map<string, unknown>();
  const declared = template.parameters.some((p) => p.name === 'agent_name')
    ? template.parameters
    : [AGENT_NAME, ...template.parameters];
  for (const name of Object.keys(given))
    if (!declared.some((p) => p.name === name))
      throw fail(name, `${name} is not a parameter of ${template.name} (${declared.map((p) => p.name).join(', ')})`);
  for (const p of declared) {
    const value = Object.hasOwn(given, p.name) ? given[p.name] : p.default_value;
    if (value === undefined) throw fail(p.name, `${p.name} is required: ${p.description || p.type}`);
    const [ok, what] = TYPE_CHECKS[p.type];
    if (!ok(value)) throw fail(p.name, `${p.name} must be ${what}`);
    values.set(p.name, value);
  }
  const agentName = ResourceName.safeParse(values.get('agent_name'));
  if (!agentName.success)
    throw fail('agent_name', `agent_name ${agentName.error.issues[0]?.message ?? 'is not a resource name'}`);
  return values;
}

/** A string with its placeholders replaced; a string that is one placeholder becomes the value itself. */
function substitute(text: string, values: ReadonlyMap<string, unknown>): unknown {
  const whole = /^\{\{([A-Za-z_][A-Za-z0-9_]*)\}\}$/.exec(text);
  if (whole && values.has(whole[1] ?? '')) return values.get(whole[1] ?? '');
  return text.replace(PLACEHOLDER, (_match, name: string) => {
    if (!values.has(name))
      throw validationError([
        { field: 'resources', message: `The template names {{${name}}}, which is not one of its parameters` },
      ]);
    const value = values.get(name);
    return typeof value === 'string' ? value : JSON.stringify(value);
  });
}

/** Creates every resource of the template; answers their object ids, in the order they were created. */
export async function createAgent(
  s: TemplatesDeps,
  principal: Principal,
  { template: templateName, parameters: given }: { template: string; parameters: Record<string, unknown> },
): Promise<{ object_ids: string[] }> {
  const doc = await readResource(s, servedType(agentTemplates), templateName);
  if (!doc || doc.deleted || !isOf(doc, agentTemplates)) throw notFound(`agent-template ${templateName} not found`);
  const { parameters, resources } = doc;
  const parsed = agentTemplates.schema.safeParse({ name: doc.name, parameters, resources });
  if (!parsed.success)
    throw validationError([
      {
        field: 'template',
        message: `${templateName} is not a valid template: ${parsed.error.issues[0]?.message ?? ''}`,
      },
    ]);
  const template: AgentTemplateDoc = { ...doc, parameters: parsed.data.parameters, resources: parsed.data.resources };
  const values = new Map([...parameterValues(template, given), ['instance_id', s.config.instanceId]]);
  const incoming: Incoming[] = template.resources.map((r, i) => {
    const writable = typeOf(r.type);
    if (!writable)
      throw validationError([
        { field: `resources[${i}].type`, message: `${r.type} is not a resource type a template can create` },
      ]);
    const { type: _t, ...definition } = mapDefinitionStrings(r, (v) => substitute(v, values));
    return { type: writable, definition };
  });
  const planned = await planChanges(s, principal, incoming, { createOnly: true });
  await applyPlan(s, principal, planned);
  return { object_ids: planned.map((p) => p.object_id) };
}
