// What the service does around the writes of a resource type: computed fields, checks that need the running
// service, authorization beyond the resource path, and hooks after a write. Rules are attached to the kinds
// where the registry is assembled (registry.ts); the generic provider (resources.ts) runs them.
import type { Principal } from '../auth/principal.js';
import type { DefinitionOf, ResourceKind, ResourceOf } from './types/resource-type.js';
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
import type { ResourceCache } from './resource-cache.js';
import type { AppSettings } from './settings.js';
import type { Producer } from '../queues/producer.js';
import type { BlobService } from '../store/storage.js';
import type { DocumentStore } from '../store/types.js';

/** What this module uses of the service (the hosts pass the whole of it). */
export interface ResourceRulesDeps {
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

export interface HookContext {
  services: ResourceRulesDeps;
  principal: Principal;
  objectId: string;
}

// Method signatures: a kind's rules, typed by its own schema, are rules of the registry's general type.
export interface ResourceRules<K extends ResourceKind> {
  /** Fields the service computes, from the new definition and the stored resource when updating. */
  computed?(definition: DefinitionOf<K>, existing: ResourceOf<K> | undefined, ctx: HookContext): Partial<ResourceOf<K>>;
  /** Checks that need the running service (configuration, other resources); throws a 4xx DomainError. */
  validate?(definition: DefinitionOf<K>, ctx: HookContext): Promise<void>;
  /**
   * Authorization beyond write on the resource path (role assignments: write at the scope they grant, and
   * at the scope the stored assignment granted when it is being changed).
   */
  authorizeWrite?(definition: DefinitionOf<K>, existing: ResourceOf<K> | undefined, ctx: HookContext): Promise<void>;
  /** Authorization beyond delete on the resource path (role assignments: delete at the scope they grant). */
  authorizeDelete?(doc: ResourceOf<K>, ctx: HookContext): Promise<void>;
  /** Runs after a create (not an update). */
  afterCreate?(doc: ResourceOf<K>, ctx: HookContext): Promise<void>;
  /** Runs after every write, delete and purge: cache invalidation. */
  afterChange?(doc: ResourceOf<K>, ctx: HookContext): Promise<void> | void;
  /** What reads show of a stored resource (secret values masked); the stored document when absent. */
  present?(resource: Record<string, unknown>): Record<string, unknown>;
  /** Runs after a purge. */
  afterPurge?(doc: ResourceOf<K>, ctx: HookContext): Promise<void>;
}

/** A resource type as the Management API serves it: the kind and its rules. */
export type ResourceType<K extends ResourceKind = ResourceKind> = K & ResourceRules<K>;
