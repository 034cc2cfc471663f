// The composition root: everything a handler may use, built once per process from configuration.
import type { GraphOptions } from './auth/graph.js';
import type { CredentialGate } from './net/credential-gate.js';
import { createAuthenticator, type Authenticator } from './auth/authenticate.js';
import type { Authorizer } from './auth/authorizer.js';
import { AgentTokens, type AgentTokenDoc } from './auth/agent-tokens.js';
import { bootstrapOwners } from './auth/bootstrap.js';
import { PrincipalDirectory } from './auth/directory.js';
import { UpnBindings } from './auth/upn-bindings.js';
import { RoleBasedAuthorizer } from './auth/rbac.js';
import type { RoleAssignmentDoc } from './providers/types/authorization.js';
import { createBearerVerifier, type BearerVerifier } from './auth/bearer.js';
import type { Config } from './config.js';
import { createLog, type Log } from './log.js';
import { gateOf, ModelCredentials } from './models/credentials.js';
import { ModelGateway } from './models/gateway.js';
import { guardedAgent } from './net/outbound.js';
import { Quotas } from './completions/quotas.js';
import { Budgets } from './completions/budgets.js';
import { Pager } from './http/paging.js';
import { storedKey } from './store/stored-key.js';
import { SessionTurns } from './conversations/turns.js';
import { Conversations } from './conversations/conversations.js';
import { Files, type FileDoc } from './files/files.js';
import { Memories, type MemoryDoc } from './memory/memory.js';
import { ArtifactPackages, type ArtifactPackageDoc } from './artifacts/packages.js';
import { Evaluations } from './evaluations/evaluations.js';
import { packageStores, PluginPackages, type PackageDoc } from './plugins/packages.js';
import { PluginRuntime } from './plugins/runtime.js';
import { createSandbox } from './sandbox/create.js';
import { ResourceCache } from './providers/resource-cache.js';
import { objectIdOf, type AnyResource } from './providers/types/resource-type.js';
import { agents } from './providers/types/agent.js';
import { AppSettings, type SettingDoc } from './providers/settings.js';
import { QueueProducer, readQueue, type Producer } from './queues/producer.js';
import { observeQueues } from './telemetry/metrics.js';
import { migrate } from './migrations.js';
import { openStore } from './store/open.js';
import { createBlobService, createQueueService, type BlobService, type QueueService } from './store/storage.js';
import type { Dispatcher } from './net/undici.js';
import type { DocumentStore } from './store/types.js';
import { ExtractionPool } from './knowledge/extract-pool.js';
import { lazyVectorIndex } from './knowledge/open.js';
import type { VectorIndex } from './knowledge/vector-index.js';

export interface Services {
  readonly config: Config;
  readonly log: Log;
  readonly store: DocumentStore;
  readonly bearer: BearerVerifier;
  readonly auth: Authenticator;
  readonly authorizer: Authorizer;
  readonly directory: PrincipalDirectory;
  /** Microsoft Graph with the service's identity (GRAPH_ENABLED): directory lookups and SharePoint sources. */
  readonly graph: GraphOptions | undefined;
  /** Each UPN bound to the object id that first signed in with it: a reused UPN owns no one else's data. */
  readonly upnBindings: UpnBindings;
  readonly agentTokens: AgentTokens;
  readonly resourceCache: ResourceCache;
  readonly conversations: Conversations;
  /** The running turns of sessions (multitask_strategy), shared by every instance through the store. */
  readonly turns: SessionTurns;
  readonly files: Files;
  readonly models: ModelGateway;
  /** API keys and managed-identity tokens for outbound calls (models, tool servers). */
  readonly credentials: ModelCredentials;
  /** The one source of managed-identity tokens: each audience's scopes, only to that audience's hosts. */
  readonly gate: CredentialGate;
  readonly quotas: Quotas;
  readonly budgets: Budgets;
  /** Pages of lists, with continuation tokens signed by the store's paging key. */
  readonly pager: Pager;
  readonly memories: Memories;
  readonly packages: PluginPackages;
  /** Resources moved between instances as versioned packages (plan and apply). */
  readonly artifacts: ArtifactPackages;
  readonly evaluations: Evaluations;
  /** Python plugins and the code interpreter, run in the sandbox. */
  readonly plugins: PluginRuntime;
  readonly settings: AppSettings;
  readonly blobs: BlobService;
  readonly queues: QueueService;
  readonly producer: Producer;
  /** Worker threads that read documents' text (HTML, PDF, Word), bounded in time and memory. */
  readonly extraction: ExtractionPool;
  /** Partitions of knowledge documents and semantic cache entries, searched by similarity. */
  readonly vectors: VectorIndex;
  /** Connections to URLs users configure (webhooks, web data sources): the outbound rules for user URLs. */
  readonly userDispatcher: Dispatcher;
  close(): Promise<void>;
}

export interface ServiceOverrides {
  store?: DocumentStore;
  log?: Log;
  /** Where queue messages go (tests that run the service in process keep them in memory). */
  producer?: Producer;
}

export async function createServices(config: Config, overrides: ServiceOverrides = {}): Promise<Services> {
  const log = overrides.log ?? createLog({ level: config.logLevel, ...(config.logFormat ? { format: config.logFormat } : {}) });
  const store = overrides.store ?? (await openStore(config.store));
  await migrate(store, (message) => log.info(message));
  const bearer = await createBearerVerifier(config.auth);
  const gate = gateOf(config);
  const queues = createQueueService(config.storage, gate);
  const authorizer = new RoleBasedAuthorizer(store.container<RoleAssignmentDoc>('resources'), config.instanceId);
  await bootstrapOwners(store, config);
  const graph = config.graphUrl ? graphOptions(config.graphUrl, gate) : undefined;
  const directory = new PrincipalDirectory(
    store.container('principals'),
    store.container('resources'),
    graph,
    (e) => log.warn('A directory write or lookup failed', { error: e instanceof Error ? e.message : String(e) }),
  );
  const blobs = createBlobService(config.storage, gate);
  const conversations = new Conversations(store.container('sessions'));
  const resourceCache = new ResourceCache(store.container<AnyResource>('resources'), config.instanceId);
  const agentTokens = new AgentTokens(store.container<AgentTokenDoc>('tokens'), config.instanceId, config.internalDomain, (name) =>
    resourceCache.get(objectIdOf(config.instanceId, agents, name), agents),
  );
  const settings = new AppSettings(store.container<SettingDoc>('resources'));
  const budgets = new Budgets(settings, store.container('quotas'), log);
  const upnBindings = new UpnBindings(store.container('principals'));
  const vectors = lazyVectorIndex(config);
  const extraction = new ExtractionPool({ timeoutMs: config.knowledge.extractionTimeoutMs });
  const stores = packageStores(blobs, config.packages.privateStore, config.packages.publicStoreUrl);
  const packages = new PluginPackages(store.container<PackageDoc>('resources'), blobs.container(config.packages.container), stores, config.instanceId, config.packages.maxBytes);
  const artifacts = new ArtifactPackages(store.container<ArtifactPackageDoc>('resources'), stores, config.instanceId, config.packages.maxBytes);
  const plugins = new PluginRuntime(packages, createSandbox(config, gate, log), config.instanceId);
  const credentials = new ModelCredentials(config, gate);
  const userDispatcher = guardedAgent({ policy: 'user', allowPrivateNetwork: config.allowPrivateNetwork });
  const queueNames = [config.asyncQueue, config.webhooks.queue, config.knowledge.queue];
  const unobserve = observeQueues([...queueNames, ...queueNames.map((q) => `${q}-poison`)], (name) => readQueue(queues, name));
  return {
    config,
    log,
    store,
    bearer,
    auth: createAuthenticator(bearer, { agentTokens, onUser: (p) => directory.seen(p), owner: (p) => upnBindings.owner(p) }),
    upnBindings,
    authorizer,
    directory,
    graph,
    agentTokens,
    resourceCache,
    conversations,
    turns: new SessionTurns(store.container('sessions'), conversations),
    files: new Files(store.container<FileDoc>('files'), blobs.container(config.filesContainer), config.instanceId, config.maxUploadBytes),
    credentials,
    gate,
    models: new ModelGateway({
      maxRetries: config.modelMaxRetries,
      maxResponseBytes: config.modelMaxResponseBytes,
      credentials,
      // No limit per origin: the gateway's connection gate bounds each endpoint by its max_connections.
      dispatcher: guardedAgent({ policy: 'model', allowPrivateNetwork: config.allowPrivateNetwork }, { connections: null }),
      publicDispatcher: guardedAgent({ policy: 'user', allowPrivateNetwork: config.allowPrivateNetwork }, { connections: null }),
    }),
    quotas: new Quotas(settings, store.container('quotas'), log),
    budgets,
    pager: new Pager(storedKey(store.container('resources'), 'paging-key')),
    memories: new Memories(store.container<MemoryDoc>('memories'), config.memoryMaxBytes),
    packages,
    artifacts,
    evaluations: new Evaluations(store),
    plugins,
    settings,
    blobs,
    queues,
    producer: overrides.producer ?? new QueueProducer(queues),
    vectors,
    extraction,
    userDispatcher,
    close: async () => {
      unobserve();
      await budgets.close();
      await extraction.close();
      await plugins.sandbox.close();
      await vectors.close();
      await store.close();
    },
  };
}

function graphOptions(baseUrl: string, gate: CredentialGate) {
  return { baseUrl, getToken: () => gate.bearer('graph', baseUrl) };
}
