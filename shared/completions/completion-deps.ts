// The collaborators the completion pipeline's stages use: one declaration, so each stage's signature names it once.
import type { Authorizer } from '../auth/authorizer.js';
import type { PrincipalDirectory } from '../auth/directory.js';
import type { Budgets } from './budgets.js';
import type { Quotas } from './quotas.js';
import type { Config } from '../config.js';
import type { Conversations } from '../conversations/conversations.js';
import type { SessionTurns } from '../conversations/turns.js';
import type { Files } from '../files/files.js';
import type { ExtractionPool } from '../knowledge/extract-pool.js';
import type { VectorIndex } from '../knowledge/vector-index.js';
import type { Log } from '../log.js';
import type { Memories } from '../memory/memory.js';
import type { ModelCredentials } from '../models/credentials.js';
import type { ModelGateway } from '../models/gateway.js';
import type { Dispatcher } from '../net/undici.js';
import type { PluginRuntime } from '../plugins/runtime.js';
import type { ResourceCache } from '../providers/resource-cache.js';
import type { AppSettings } from '../providers/settings.js';
import type { DocumentStore } from '../store/types.js';

/** What the completion pipeline uses of the service (the hosts pass the whole of it). */
export interface CompletionDeps {
  readonly authorizer: Authorizer;
  readonly budgets: Budgets;
  readonly config: Config;
  readonly conversations: Conversations;
  readonly credentials: ModelCredentials;
  readonly directory: PrincipalDirectory;
  readonly extraction: ExtractionPool;
  readonly files: Files;
  readonly log: Log;
  readonly memories: Memories;
  readonly models: ModelGateway;
  readonly plugins: PluginRuntime;
  readonly quotas: Quotas;
  readonly resourceCache: ResourceCache;
  readonly settings: AppSettings;
  readonly store: DocumentStore;
  readonly turns: SessionTurns;
  readonly userDispatcher: Dispatcher;
  readonly vectors: VectorIndex;
}
