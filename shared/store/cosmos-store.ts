// The Cosmos DB document store: @azure/cosmos with managed identity in Azure, a key only for emulators.
// This module connects (creating the database and containers for emulators) and checks the account at
// start-up; a container's reads and writes are cosmos-container.ts, its batches cosmos-batch.ts.
import { CosmosClient, type IndexingPolicy } from '@azure/cosmos';
import type { TokenCredential } from '@azure/core-auth';
import { CredentialGate, CredentialGateError } from '../net/credential-gate.js';
import { ConfigError } from '../config.js';
import { CONTAINER_LIST, indexFields, type ContainerDefinition } from './containers.js';
import { CosmosContainer } from './cosmos-container.js';
import { status } from './cosmos-errors.js';
import { segments } from './fields.js';
import { containerNamed, type Doc, type DocumentStore } from './types.js';

export interface CosmosStoreOptions {
  endpoint: string;
  database: string;
  /** Account key: emulators and local Cosmos-compatible servers only. Without it, Entra ID is used. */
  key?: string | undefined;
  /** Client id of the user-assigned managed identity. */
  clientId?: string | undefined;
  /** Create the database and containers when missing (needs control-plane rights: emulators only). */
  createContainers?: boolean;
  definitions?: readonly ContainerDefinition[];
}

/** The indexing policy a container definition asks for: everything indexed, plus its composite indexes. */
export function cosmosIndexingPolicy(def: ContainerDefinition): IndexingPolicy {
  const composite = def.indexes.map(indexFields).filter((fields) => fields.length > 1);
  return {
    indexingMode: 'consistent',
    automatic: true,
    includedPaths: [{ path: '/*' }],
    excludedPaths: [{ path: '/"_etag"/?' }],
    ...(composite.length > 0
      ? {
          compositeIndexes: composite.map((fields) =>
            fields.map((f) => ({ path: `/${segments(f).join('/')}`, order: 'ascending' as const })),
          ),
        }
      : {}),
  };
}

/** How the store authenticates, as an operator would name it. */
const authMode = (o: CosmosStoreOptions) =>
  o.key
    ? 'account key (COSMOS_KEY)'
    : o.clientId
      ? `managed identity (AZURE_CLIENT_ID=${o.clientId})`
      : 'Entra ID (managed identity, or az login)';

/** Why Cosmos DB cannot be used, in words an operator can act on. */
function whyUnusable(e: unknown, database: string): string {
  const cause = typeof e === 'object' && e !== null && 'cause' in e ? e.cause : undefined;
  const names = [e, cause].map((x) => (x instanceof Error ? x.name : ''));
  if (names.some((n) => n === 'CredentialUnavailableError' || n === 'AggregateAuthenticationError'))
    return 'no Azure credential is available here';
  if (names.includes('AuthenticationError')) return 'the identity could not get a token';
  if (names.includes('AbortError') || names.includes('TimeoutError')) return 'no answer within 15 s';
  switch (status(e)) {
    case 401:
      return 'the credential was refused';
    case 403:
      return 'the identity has no data-plane role on the account (Cosmos DB Built-in Data Contributor)';
    case 404:
      return `database ${database} does not exist (provision it from infra/)`;
  }
  if (typeof e === 'object' && e !== null && 'code' in e && typeof e.code === 'string')
    return `cannot connect (${e.code})`;
  return (e instanceof Error ? e.message : String(e)).split('\n')[0]?.slice(0, 200) ?? 'unknown error';
}

/**
 * Creates what is missing (emulators), then reads the database's metadata: a wrong endpoint or credential
 * fails at start-up, in one line naming the setting and the authentication, not at the first request.
 */
async function connect(
  client: CosmosClient,
  database: ReturnType<CosmosClient['database']>,
  definitions: readonly ContainerDefinition[],
  options: CosmosStoreOptions,
): Promise<void> {
  const abortSignal = AbortSignal.timeout(15_000);
  try {
    if (options.createContainers) {
      await client.databases.createIfNotExists({ id: options.database }, { abortSignal });
      for (const def of definitions) {
        await database.containers.createIfNotExists(
          {
            id: def.name,
            partitionKey: { paths: [def.partitionKeyPath] },
            indexingPolicy: cosmosIndexingPolicy(def),
            ...(def.defaultTtlSeconds !== undefined ? { defaultTtl: def.defaultTtlSeconds } : {}),
          },
          { abortSignal },
        );
      }
    }
    await database.read({ abortSignal });
  } catch (e) {
    throw new ConfigError(
      `Cosmos DB is not usable: COSMOS_ENDPOINT=${options.endpoint}, COSMOS_DATABASE=${options.database}, ` +
        `authentication: ${authMode(options)}: ${whyUnusable(e, options.database)}`,
    );
  }
}

/**
 * A Cosmos DB token for the account's own https host only, through the credential gate. An endpoint that may
 * not have one gets a credential that refuses: start-up then fails naming the endpoint and why.
 */
function cosmosCredential(endpoint: string, clientId: string | undefined): TokenCredential {
  const gate = new CredentialGate({ serviceAudience: '', serviceHosts: [], clientId });
  const problem = gate.urlProblem('cosmos', endpoint);
  if (problem)
    return {
      getToken: () => Promise.reject(new CredentialGateError(`COSMOS_ENDPOINT ${problem} (or set COSMOS_KEY)`)),
    };
  return gate.credentialFor('cosmos', endpoint);
}

/** A client for the account: its key where one is given (emulators), else Entra ID. */
export function cosmosClient(options: Pick<CosmosStoreOptions, 'endpoint' | 'key' | 'clientId'>): CosmosClient {
  const plainHttp = options.endpoint.startsWith('http://');
  return new CosmosClient({
    endpoint: options.endpoint,
    ...(options.key ? { key: options.key } : { aadCredentials: cosmosCredential(options.endpoint, options.clientId) }),
    // Local Cosmos-compatible servers over plain HTTP have no regional endpoints to discover.
    ...(plainHttp ? { connectionPolicy: { enableEndpointDiscovery: false } } : {}),
  });
}

export async function openCosmosStore(options: CosmosStoreOptions): Promise<DocumentStore> {
  const definitions = options.definitions ?? CONTAINER_LIST;
  const client = cosmosClient(options);
  const database = client.database(options.database);
  await connect(client, database, definitions, options);
  const containers = new Map(
    definitions.map((d) => [d.name, new CosmosContainer<Doc>(database.container(d.name), d.name)]),
  );
  return {
    kind: 'cosmos',
    container: (name) => containerNamed(containers, name),
    close() {
      client.dispose();
      return Promise.resolve();
    },
  };
}
