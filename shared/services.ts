// The composition root: everything a handler may use, built once per process from configuration.
import type { BlobServiceClient } from '@azure/storage-blob';
import type { QueueServiceClient } from '@azure/storage-queue';
import { createAuthenticator, type Authenticator } from './auth/authenticate.js';
import type { Authorizer } from './auth/authorizer.js';
import { AgentTokens, type AgentTokenDoc } from './auth/agent-tokens.js';
import { bootstrapOwners } from './auth/bootstrap.js';
import { PrincipalDirectory } from './auth/directory.js';
import { RoleBasedAuthorizer, type RoleAssignmentDoc } from './auth/rbac.js';
import { createBearerVerifier, type BearerVerifier } from './auth/bearer.js';
import type { Config } from './config.js';
import { createLog, type Log } from './log.js';
import { AppSettings, type AppConfigDoc } from './providers/settings.js';
import { QueueProducer } from './queues/handler.js';
import { openStore } from './store/open.js';
import { createBlobService, createQueueService } from './store/storage.js';
import { DefaultAzureCredential } from '@azure/identity';
import type { DocumentStore } from './store/types.js';

export interface Services {
  readonly config: Config;
  readonly log: Log;
  readonly store: DocumentStore;
  readonly bearer: BearerVerifier;
  readonly auth: Authenticator;
  readonly authorizer: Authorizer;
  readonly directory: PrincipalDirectory;
  readonly agentTokens: AgentTokens;
  readonly settings: AppSettings;
  readonly blobs: BlobServiceClient;
  readonly queues: QueueServiceClient;
  readonly producer: QueueProducer;
  close(): Promise<void>;
}

export interface ServiceOverrides {
  store?: DocumentStore;
  log?: Log;
}

export async function createServices(config: Config, overrides: ServiceOverrides = {}): Promise<Services> {
  const log = overrides.log ?? createLog();
  const store = overrides.store ?? (await openStore(config.store));
  const bearer = await createBearerVerifier(config.auth);
  const queues = createQueueService(config.storage);
  const authorizer = new RoleBasedAuthorizer(store.container<RoleAssignmentDoc>('resources'), config.instanceId);
  await bootstrapOwners(store, config);
  const directory = new PrincipalDirectory(
    store.container('principals'),
    store.container('resources'),
    config.graphUrl ? graphOptions(config.graphUrl, config.azureClientId) : undefined,
    (e) => log.warn('Could not record a principal', { error: e instanceof Error ? e.message : String(e) }),
  );
  const agentTokens = new AgentTokens(store.container<AgentTokenDoc>('tokens'), config.instanceId, config.internalDomain);
  return {
    config,
    log,
    store,
    bearer,
    auth: createAuthenticator(bearer, { agentTokens, onUser: (p) => directory.seen(p) }),
    authorizer,
    directory,
    agentTokens,
    settings: new AppSettings(store.container<AppConfigDoc>('resources')),
    blobs: createBlobService(config.storage),
    queues,
    producer: new QueueProducer(queues),
    close: () => store.close(),
  };
}

function graphOptions(baseUrl: string, clientId: string | undefined) {
  const credential = new DefaultAzureCredential(clientId ? { managedIdentityClientId: clientId } : {});
  return {
    baseUrl,
    getToken: async () => {
      const token = await credential.getToken(`${baseUrl}/.default`);
      return token.token;
    },
  };
}
