// A set of resource definitions made true on this instance, as artifact packages (apply) and agent templates
// (create-agent) both need: every definition checked by its type's schema, every object id it names found in
// the set or on the instance, every write authorized, all before anything is written; then the writes in
// dependency order through the resource provider (its rules, versions and hooks), skipping what is unchanged.
import type { Principal } from '../auth/principal.js';
import { conflict, validationError } from '../errors.js';
import { RESOURCE_TYPES } from '../registry/registry.js';
import type { ResourceType } from '../providers/resource-rules.js';
import { objectIdOf, partitionOf, SERVICE_FIELDS, type AnyResource } from '../providers/types/resource-type.js';
import { readResource, upsertResource } from '../providers/resources.js';
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
export interface ResourceSetDeps {
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

export interface Change {
  object_id: string;
  action: 'create' | 'update' | 'unchanged';
  /** The top-level fields a create sets or an update changes. */
  fields: string[];
}

/** A definition to make true, of a served type (its object ids already naming this instance). */
export interface Incoming {
  type: ResourceType;
  definition: Record<string, unknown>;
}

interface Planned extends Change {
  type: ResourceType;
  name: string;
  definition: { name: string };
}

const OBJECT_ID = /^\/instances\/([^/]+)\/providers\/(Svc\.[A-Za-z]+)\/([A-Za-z]+)\/([^/]+)$/;

/** The served type a provider path names, when it is one that callers write. */
export function writableType(provider: string, segment: string): ResourceType | undefined {
  const t = RESOURCE_TYPES.find(
    (x) => x.provider.toLowerCase() === provider.toLowerCase() && x.segment.toLowerCase() === segment.toLowerCase(),
  );
  return t && !t.builtIn && !t.serviceWritten ? t : undefined;
}

/**
 * The served type a definition's `type` names: its type value (`prompt`) or its provider path
 * (`Svc.Prompt/prompts`), when callers write it.
 */
export function typeOf(type: string): ResourceType | undefined {
  const [provider, segment] = type.split('/');
  const t =
    segment !== undefined
      ? RESOURCE_TYPES.find((x) => x.provider === provider && x.segment === segment)
      : RESOURCE_TYPES.find((x) => x.type === type);
  return t && writableType(t.provider, t.segment);
}

/** The type and name an object id of this instance names; undefined for anything else. */
export function parseObjectId(objectId: string, instanceId: string): { type: ResourceType; name: string } | undefined {
  const m = OBJECT_ID.exec(objectId);
  if (!m || m[1] !== instanceId) return undefined;
  const type = writableType(m[2] ?? '', m[3] ?? '');
  return type && { type, name: m[4] ?? '' };
}

/** Every string in a value, depth first. */
function* strings(value: unknown): Generator<string> {
  if (typeof value === 'string') yield value;
  else if (Array.isArray(value)) for (const v of value) yield* strings(v);
  else if (value && typeof value === 'object') for (const v of Object.values(value)) yield* strings(v);
}

/** A value with every string mapped (object ids rewritten, template parameters replaced). */
export function mapStrings(value: unknown, map: (s: string) => unknown): unknown {
  if (typeof value === 'string') return map(value);
  if (Array.isArray(value)) return value.map((v) => mapStrings(v, map));
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, mapStrings(v, map)]));
  return value;
}

/** A definition with every string of its fields mapped: still an object of fields. */
export function mapDefinitionStrings(
  definition: Record<string, unknown>,
  map: (s: string) => unknown,
): Record<string, unknown> {
  return Object.fromEntries(Object.entries(definition).map(([k, v]) => [k, mapStrings(v, map)]));
}

/** JSON with keys in order at every level: equal definitions give equal text. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.localeCompare(b)))
      : v,
  );
}

/**
 * What of a resource travels between instances: its definition without store bookkeeping, service fields or
 * the fields that belong to one instance (an agent's security group, a secret's replaced value).
 */
export function portable(t: ResourceType, doc: object): Record<string, unknown> {
  const dropped = new Set<string>(['id', 'pk', '_etag', 'ttl', ...SERVICE_FIELDS, ...(t.instanceFields ?? [])]);
  const fields: [string, unknown][] = Object.entries(doc);
  return Object.fromEntries(fields.filter(([k, v]) => !dropped.has(k) && v !== undefined));
}

/** The top-level fields whose values differ. */
function changedFields(before: Record<string, unknown>, after: Record<string, unknown>): string[] {
  const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
  return [...keys].filter((k) => k !== 'type' && canonicalJson(before[k]) !== canonicalJson(after[k])).sort();
}

/** The order to write in: what a definition names first (Kahn's algorithm; ties keep the given order). */
function dependencyOrder(planned: Planned[], refs: Map<Planned, Planned[]>): Planned[] {
  const order: Planned[] = [];
  const done = new Set<Planned>();
  while (order.length < planned.length) {
    const next = planned.find((p) => !done.has(p) && (refs.get(p) ?? []).every((d) => d === p || done.has(d)));
    if (!next)
      throw validationError([
        {
          field: 'resources',
          message: `The resources name each other in a cycle: ${planned
            .filter((p) => !done.has(p))
            .map((p) => p.object_id)
            .join(', ')}`,
        },
      ]);
    order.push(next);
    done.add(next);
  }
  return order;
}

/**
 * What making the definitions true would change, checked whole: 400 for a definition its type refuses or an
 * object id found neither in the set nor on the instance, 403 for a write the caller may not make, 409 for a
 * resource that is soft-deleted here (or, with `createOnly`, that exists at all). Nothing is written.
 */
export async function planChanges(
  s: ResourceSetDeps,
  principal: Principal,
  incoming: readonly Incoming[],
  options: { createOnly?: boolean } = {},
): Promise<Planned[]> {
  const planned: Planned[] = [];
  for (const [i, { type, definition }] of incoming.entries()) {
    const parsed = type.schema.safeParse(portable(type, definition));
    if (!parsed.success) {
      throw validationError(
        parsed.error.issues.map((issue) => ({
          field: `resources[${i}].${issue.path.join('.')}`,
          message: `${type.type} ${String(definition.name)}: ${issue.message}`,
        })),
      );
    }
    const name = parsed.data.name;
    const objectId = objectIdOf(s.config.instanceId, type, name);
    if (planned.some((p) => p.object_id.toLowerCase() === objectId.toLowerCase()))
      throw validationError([{ field: `resources[${i}]`, message: `${objectId} is in the set twice` }]);
    planned.push({ type, name, definition: parsed.data, object_id: objectId, action: 'create', fields: [] });
  }
  const byId = new Map(planned.map((p) => [p.object_id.toLowerCase(), p]));
  const plugins = new Set((await s.packages.plugins()).map((p) => p.object_id.toLowerCase()));
  const refs = new Map<Planned, Planned[]>();
  for (const p of planned) {
    const named: Planned[] = [];
    for (const value of strings(p.definition)) {
      if (!OBJECT_ID.test(value)) continue;
      const inSet = byId.get(value.toLowerCase());
      if (inSet) named.push(inSet);
      else if (!(await exists(s, value, plugins)))
        throw validationError([
          { field: p.object_id, message: `names ${value}, which is neither in the set nor on this instance` },
        ]);
    }
    refs.set(p, named);
  }
  for (const p of planned) {
    await s.authorizer.require(principal, `${partitionOf(p.type)}/write`, p.object_id);
    const existing = await readResource(s, p.type, p.name);
    if (existing?.deleted) throw conflict(`${p.object_id} is deleted on this instance; purge it first`);
    if (existing && options.createOnly) throw conflict(`${p.object_id} exists already`);
    const after = portable(p.type, p.definition);
    if (!existing)
      Object.assign(p, {
        action: 'create',
        fields: Object.keys(after)
          .filter((k) => k !== 'type')
          .sort(),
      });
    else {
      const fields = changedFields(comparable(p.type, existing), after);
      Object.assign(p, { action: fields.length > 0 ? 'update' : 'unchanged', fields });
    }
  }
  return dependencyOrder(planned, refs);
}

/** A stored resource as a definition of its type would give it (defaults applied, instance fields dropped). */
function comparable(t: ResourceType, doc: AnyResource): Record<string, unknown> {
  const shown = portable(t, doc);
  const parsed = t.schema.safeParse(shown);
  return parsed.success ? portable(t, parsed.data) : shown;
}

/** Whether an object id outside the set names a live resource (or an installed plugin) here. */
async function exists(s: ResourceSetDeps, objectId: string, plugins: ReadonlySet<string>): Promise<boolean> {
  if (plugins.has(objectId.toLowerCase())) return true;
  const named = parseObjectId(objectId, s.config.instanceId);
  if (!named) return false;
  const doc = await readResource(s, named.type, named.name);
  return doc !== undefined && !doc.deleted;
}

/** Writes what the plan creates or updates, in its order; answers every change, the unchanged included. */
export async function applyPlan(
  s: ResourceSetDeps,
  principal: Principal,
  planned: readonly Planned[],
): Promise<Change[]> {
  for (const p of planned)
    if (p.action !== 'unchanged') await upsertResource(s, { type: p.type, principal, name: p.name }, p.definition);
  return changesOf(planned);
}

/** The changes as the API answers them. */
export const changesOf = (planned: readonly Planned[]): Change[] =>
  planned.map(({ object_id, action, fields }) => ({ object_id, action, fields }));
