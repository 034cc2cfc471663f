// The composition root: everything a handler may use, built once per process from configuration.
import type { GraphOptions } from './auth/graph.js';
import type { CredentialGate } from './net/credential-gate.js';
import { createAuthenticator, type Authenticator } from './auth/authenticate.js';
import type { Authorizer } from './auth/authorizer.js';
import { AgentTokens } from './auth/agent-tokens.js';
import { bootstrapOwners } from './auth/bootstrap.js';
import { isPrincipal, PrincipalDirectory } from './auth/directory.js';
import { isBinding, UpnBindings } from './auth/upn-bindings.js';
import { RoleBasedAuthorizer } from './auth/rbac.js';
import { createBearerVerifier, type BearerVerifier } from './auth/bearer.js';
import type { Config } from './config.js';
import { createLog, type Log } from './log.js';
import { gateOf, ModelCredentials } from './models/credentials.js';
import { ModelGateway } from './models/gateway.js';
import { guardedAgent } from './net/outbound.js';
import { isQuotaCounter, Quotas } from './completions/quotas.js';
import { Budgets } from './completions/budgets.js';
import { isBudgetCounter } from './completions/budget-definitions.js';
import { Pager } from './http/paging.js';
import { storedKey } from './store/stored-key.js';
import { isTurn, SessionTurns } from './conversations/turns.js';
import { Conversations } from './conversations/conversations.js';
import { Files } from './files/files.js';
import { Memories } from './memory/memory.js';
import { ArtifactPackages, isArtifactPackage } from './artifacts/packages.js';
import { Evaluations } from './evaluations/evaluations.js';
import { isPluginPackage, packageStores, PluginPackages } from './plugins/packages.js';
import { PluginRuntime } from './plugins/runtime.js';
import { createSandbox } from './sandbox/create.js';
import { ResourceCache } from './providers/resource-cache.js';
import { objectIdOf, resourcesIn, resourcesOf } from './providers/types/resource-type.js';
import { agents } from './providers/types/agent.js';
import { AppSettings, settingsIn } from './providers/settings.js';
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
import { roleAssignments } from './providers/types/authorization.js';
import { narrowed } from './store/narrowed.js';

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
  const log =
    overrides.log ?? createLog({ level: config.logLevel, ...(config.logFormat ? { format: config.logFormat } : {}) });
  const store = overrides.store ?? (await openStore(config.store));
  await migrate(store, (message) => log.info(message));
  const bearer = await createBearerVerifier(config.auth);
  const gate = gateOf(config);
  const queues = createQueueService(config.storage, gate);
  const authorizer = new RoleBasedAuthorizer(resourcesOf(store, roleAssignments), config.instanceId);
  await bootstrapOwners(store, config);
  const graph = config.graphUrl ? graphOptions(config.graphUrl, gate) : undefined;
  const directory = new PrincipalDirectory(
    narrowed(store.container('principals'), isPrincipal),
    resourcesOf(store, roleAssignments),
    {
      graph,
      onError: (e) =>
        log.warn('A directory write or lookup failed', { error: e instanceof Error ? e.message : String(e) }),
    },
  );
  const blobs = createBlobService(config.storage, gate);
  const conversations = new Conversations(store.container('sessions'));
  const resourceCache = new ResourceCache(resourcesIn(store), config.instanceId);
  const agentTokens = new AgentTokens(store.container('tokens'), {
    instanceId: config.instanceId,
    internalDomain: config.internalDomain,
    agentOf: (name) => resourceCache.get(objectIdOf(config.instanceId, agents, name), agents),
  });
  const settings = new AppSettings(settingsIn(store));
  const budgets = new Budgets(settings, narrowed(store.container('quotas'), isBudgetCounter), log);
  const upnBindings = new UpnBindings(narrowed(store.container('principals'), isBinding));
  const vectors = lazyVectorIndex(config);
  const extraction = new ExtractionPool({ timeoutMs: config.knowledge.extractionTimeoutMs });
  const stores = packageStores(blobs, config.packages.privateStore, config.packages.publicStoreUrl);
  const packages = new PluginPackages({
    docs: narrowed(store.container('resources'), isPluginPackage),
    blobs: blobs.container(config.packages.container),
    stores,
    instanceId: config.instanceId,
    maxBytes: config.packages.maxBytes,
  });
  const artifacts = new ArtifactPackages({
    docs: narrowed(store.container('resources'), isArtifactPackage),
    stores,
    instanceId: config.instanceId,
    maxBytes: config.packages.maxBytes,
  });
  const plugins = new PluginRuntime(packages, createSandbox(config, gate, log), config.instanceId);
  const credentials = new ModelCredentials(config, gate);
  const userDispatcher = guardedAgent({ policy: 'user', allowPrivateNetwork: config.allowPrivateNetwork });
  const queueNames = [config.asyncQueue, config.webhooks.queue, config.knowledge.queue];
  const unobserve = observeQueues([...queueNames, ...queueNames.map((q) => `${q}-poison`)], (name) =>
    readQueue(queues, name),
  );
  return {
    config,
    log,
    store,
    bearer,
    auth: createAuthenticator(bearer, {
      agentTokens,
      onUser: (p) => directory.seen(p),
      owner: (p) => upnBindings.owner(p),
    }),
    upnBindings,
    authorizer,
    directory,
    graph,
    agentTokens,
    resourceCache,
    conversations,
    turns: new SessionTurns(narrowed(store.container('sessions'), isTurn), conversations),
    files: new Files({
      records: store.container('files'),
      blobs: blobs.container(config.filesContainer),
      instanceId: config.instanceId,
      maxBytes: config.maxUploadBytes,
      userMaxBytes: config.userStorageMaxBytes,
    }),
    credentials,
    gate,
    models: new ModelGateway({
      maxRetries: config.modelMaxRetries,
      maxResponseBytes: config.modelMaxResponseBytes,
      credentials,
      // No limit per origin: the gateway's connection gate bounds each endpoint by its max_connections.
      dispatcher: guardedAgent(
        { policy: 'model', allowPrivateNetwork: config.allowPrivateNetwork },
        { connections: null },
      ),
      publicDispatcher: guardedAgent(
        { policy: 'user', allowPrivateNetwork: config.allowPrivateNetwork },
        { connections: null },
      ),
    }),
    quotas: new Quotas(settings, narrowed(store.container('quotas'), isQuotaCounter), log),
    budgets,
    pager: new Pager(storedKey(store, 'paging-key')),
    memories: new Memories(store.container('memories'), config.memoryMaxBytes),
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
