// The service's configuration: every setting read from the environment (config-settings.ts says how each is
// read) is parsed and checked here, once, at startup, and assembled into the Config the services take (the
// one other read is the Azure host's own WEBSITE_SITE_NAME, telemetry's name for the service).
import path from 'node:path';
import { z } from 'zod';
import { SettingProblem, SETTINGS, type Settings } from './config-settings.js';
import type { LogLevel } from './log.js';

// Zod compiles a parser for each object schema the first time it parses with it: a millisecond or more
// each, paid on a cold start at the first request of each endpoint, to save about a microsecond per later
// parse. Parsed as written instead, everywhere: set here, in the module every entry loads first.
z.config({ jitless: true });

/** A setting that is missing or malformed; the message names the setting. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

export type StoreConfig =
  | { kind: 'embedded'; file: string }
  | { kind: 'cosmos'; endpoint: string; database: string; key: string | undefined; clientId: string | undefined };

export type AuthConfig =
  | { kind: 'jwks'; issuer: string; audience: string; jwksUri: string }
  | { kind: 'local'; issuer: string; audience: string; keyFile: string };

export type StorageConfig =
  | { kind: 'connection-string'; connectionString: string }
  | { kind: 'identity'; accountName: string; clientId: string | undefined };

export interface Config {
  instanceId: string;
  host: string;
  corePort: number;
  managementPort: number;
  dataDir: string;
  serviceApis: ReadonlyArray<'core' | 'management'>;
  queueWorkers: boolean;
  store: StoreConfig;
  storage: StorageConfig;
  auth: AuthConfig;
  /** Principal ids made Owner at instance scope at startup; undefined means "the local default user". */
  bootstrapOwnerIds: readonly string[] | undefined;
  internalDomain: string;
  appInsightsConnectionString: string | undefined;
  /** OTLP export: the collector's base URL, the metric export interval and the reported service name. */
  otlp: { endpoint: string; metricIntervalMs: number; serviceName: string } | undefined;
  /** Browser access: the origins allowed by CORS (undefined: the portal's own), and the portal's settings. */
  portal: {
    corsOrigins: readonly string[] | undefined;
    entra: { clientId: string; authority: string; scope: string } | undefined;
  };
  /**
   * The APIs' base URLs as clients reach them: configured, else this host's (filled in with the listening
   * ports by the standalone server when a port was 0).
   */
  publicUrls: { core: string; management: string; coreConfigured: boolean; managementConfigured: boolean };
  /** Host names requests may carry in `Host` (lower case, no port, IPv6 without brackets). */
  allowedHosts: readonly string[];
  /** Client id of the user-assigned managed identity (Azure). */
  azureClientId: string | undefined;
  /** Microsoft Graph base URL when principal search uses Graph. */
  graphUrl: string | undefined;
  maxJsonBodyBytes: number;
  maxUploadBytes: number;
  /** What one user's files (uploads and code-interpreter output) may hold in all. */
  userStorageMaxBytes: number;
  attachmentMaxTokens: number;
  memoryMaxBytes: number;
  packages: { container: string; privateStore: string; publicStoreUrl: string | undefined; maxBytes: number };
  filesContainer: string;
  modelMaxRetries: number;
  modelMaxResponseBytes: number;
  allowPrivateNetwork: boolean;
  /** Where tokens for the service's own audience may go (SERVICE_TOKEN_HOSTS). */
  serviceTokenHosts: readonly string[];
  asyncQueue: string;
  queueVisibilityTimeoutSeconds: number;
  asyncOperationTimeoutSeconds: number;
  webhooks: { queue: string; retryBaseSeconds: number };
  /** The queue of evaluation runs. */
  evaluationsQueue: string;
  /** Where clients reach the realtime relay, when it is not the Core API's own host (docs/realtime-speech.md). */
  realtimeRelayUrl: string | undefined;
  realtimeMaxCallSeconds: number;
  knowledge: {
    queue: string;
    eventsQueue: string;
    cacheTtlSeconds: number;
    file: string;
    rescoringDepth: number;
    extractionTimeoutMs: number;
    documentTimeoutMs: number;
    runTimeoutMs: number;
  };
  tools: { maxRounds: number; timeBudgetMs: number; resultMaxChars: number };
  plugins: {
    timeoutMs: number;
    memoryBytes: number;
    sessionsEndpoint: string | undefined;
    warm: number;
    concurrency: number;
    allowNetwork: boolean;
  };
  logLevel: LogLevel;
  logFormat: 'json' | 'pretty' | undefined;
  version: string;
}

/** The local identity provider's audience. */
export const LOCAL_AUDIENCE = 'api://agent-platform';

/**
 * Names of secrets that configuration may point at (an API endpoint's `api_key_secret_name`): environment
 * variables (app settings) starting with SVC_SECRET_, which in Azure are Key Vault references. No setting of
 * the service itself has that prefix, so no resource can send the service's own credentials anywhere.
 */
export const SECRET_NAME = /^SVC_SECRET_[A-Z0-9_]{1,100}$/;
export const SECRET_NAME_RULE =
  'must name a secret: an app setting or environment variable whose name starts with SVC_SECRET_ (A-Z, 0-9, _)';

/** The value of a secret named by configuration; undefined for a name outside the allowed set. */
export function readSecret(name: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (!SECRET_NAME.test(name)) return undefined;
  const value = env[name];
  return value === undefined || value === '' ? undefined : value;
}

/** Addresses that listen on every interface: no name of their own. */
const WILDCARDS = ['0.0.0.0', '::', '[::]'];
/** A host as a URL names it: a wildcard address is reached on loopback, an IPv6 address in brackets. */
const localName = (host: string) =>
  WILDCARDS.includes(host) ? '127.0.0.1' : host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
/** A host name compared as `Host` names it: lower case, IPv6 without brackets, no final dot. */
export const bareHost = (host: string) =>
  host
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '');

/** Parses the environment; throws ConfigError naming the first bad or missing setting. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, version = '0.0.0'): Config {
  const e = readSettings(env);
  if (e.CORE_PORT !== 0 && e.CORE_PORT === e.MANAGEMENT_PORT)
    throw new ConfigError(`CORE_PORT and MANAGEMENT_PORT are both ${e.CORE_PORT}: each API needs its own port`);
  const dataDir = path.resolve(e.DATA_DIR);
  return {
    instanceId: e.INSTANCE_ID.toLowerCase(),
    host: e.HOST,
    corePort: e.CORE_PORT,
    managementPort: e.MANAGEMENT_PORT,
    dataDir,
    serviceApis: e.SERVICE_APIS,
    queueWorkers: e.QUEUE_WORKERS,
    store: storeConfig(e, dataDir),
    storage: storageConfig(e),
    auth: authConfig(e, dataDir),
    bootstrapOwnerIds: e.BOOTSTRAP_OWNER_IDS,
    internalDomain: e.INTERNAL_DOMAIN,
    appInsightsConnectionString: e.APPLICATIONINSIGHTS_CONNECTION_STRING,
    publicUrls: {
      core: e.CORE_API_URL?.replace(/\/+$/, '') ?? `http://${localName(e.HOST)}:${e.CORE_PORT}`,
      management: e.MANAGEMENT_API_URL?.replace(/\/+$/, '') ?? `http://${localName(e.HOST)}:${e.MANAGEMENT_PORT}`,
      coreConfigured: e.CORE_API_URL !== undefined,
      managementConfigured: e.MANAGEMENT_API_URL !== undefined,
    },
    allowedHosts: [
      ...new Set(
        [
          'localhost',
          '127.0.0.1',
          '::1',
          ...(WILDCARDS.includes(e.HOST) ? [] : [e.HOST]),
          ...(e.ALLOWED_HOSTS ?? []),
          ...[e.CORE_API_URL, e.MANAGEMENT_API_URL, e.REALTIME_RELAY_URL].flatMap((u) =>
            u ? [new URL(u).hostname] : [],
          ),
        ].map(bareHost),
      ),
    ],
    portal: {
      corsOrigins: e.CORS_ALLOWED_ORIGINS,
      entra: e.PORTAL_ENTRA_CLIENT_ID
        ? {
            clientId: e.PORTAL_ENTRA_CLIENT_ID,
            authority: e.PORTAL_ENTRA_AUTHORITY ?? 'https://login.microsoftonline.com/organizations',
            scope: e.PORTAL_API_SCOPE ?? `${e.AUTH_AUDIENCE ?? LOCAL_AUDIENCE}/.default`,
          }
        : undefined,
    },
    otlp: e.OTEL_EXPORTER_OTLP_ENDPOINT
      ? {
          endpoint: e.OTEL_EXPORTER_OTLP_ENDPOINT,
          metricIntervalMs: e.OTEL_METRIC_EXPORT_INTERVAL,
          serviceName: e.OTEL_SERVICE_NAME,
        }
      : undefined,
    azureClientId: e.AZURE_CLIENT_ID,
    graphUrl: e.GRAPH_ENABLED ? e.GRAPH_URL : undefined,
    maxJsonBodyBytes: e.MAX_JSON_BODY_BYTES,
    maxUploadBytes: e.MAX_UPLOAD_BYTES,
    userStorageMaxBytes: e.USER_STORAGE_MAX_BYTES,
    attachmentMaxTokens: e.ATTACHMENT_MAX_TOKENS,
    memoryMaxBytes: e.MEMORY_MAX_BYTES,
    packages: {
      container: e.PACKAGES_CONTAINER,
      privateStore: e.PACKAGE_STORE_PRIVATE_CONTAINER,
      publicStoreUrl: e.PACKAGE_STORE_PUBLIC_URL,
      maxBytes: e.MAX_PACKAGE_BYTES,
    },
    filesContainer: e.FILES_CONTAINER,
    modelMaxRetries: e.MODEL_MAX_RETRIES,
    modelMaxResponseBytes: e.MODEL_MAX_RESPONSE_BYTES,
    allowPrivateNetwork: e.ALLOW_PRIVATE_NETWORK,
    serviceTokenHosts: e.SERVICE_TOKEN_HOSTS.map((h) => h.toLowerCase()),
    asyncQueue: e.ASYNC_COMPLETIONS_QUEUE,
    queueVisibilityTimeoutSeconds: e.QUEUE_VISIBILITY_TIMEOUT_SECONDS,
    asyncOperationTimeoutSeconds: e.ASYNC_OPERATION_TIMEOUT_SECONDS,
    webhooks: { queue: e.WEBHOOKS_QUEUE, retryBaseSeconds: e.WEBHOOK_RETRY_BASE_SECONDS },
    // The embedded vector index's file, beside the embedded store's (unused with STORE=cosmos).
    evaluationsQueue: e.EVALUATIONS_QUEUE,
    realtimeRelayUrl: e.REALTIME_RELAY_URL,
    realtimeMaxCallSeconds: e.REALTIME_MAX_CALL_SECONDS,
    knowledge: {
      queue: e.PIPELINES_QUEUE,
      eventsQueue: e.PIPELINE_EVENTS_QUEUE,
      cacheTtlSeconds: e.SEMANTIC_CACHE_TTL_SECONDS,
      file: path.join(dataDir, 'knowledge.db'),
      rescoringDepth: e.KNOWLEDGE_RESCORING_DEPTH,
      extractionTimeoutMs: e.EXTRACTION_TIMEOUT_SECONDS * 1000,
      documentTimeoutMs: e.PIPELINE_DOCUMENT_TIMEOUT_SECONDS * 1000,
      runTimeoutMs: e.PIPELINE_RUN_TIMEOUT_SECONDS * 1000,
    },
    logLevel: e.LOG_LEVEL,
    logFormat: e.LOG_FORMAT,
    tools: {
      maxRounds: e.TOOL_MAX_ROUNDS,
      timeBudgetMs: e.TOOL_TIME_BUDGET_SECONDS * 1000,
      resultMaxChars: e.TOOL_RESULT_MAX_CHARS,
    },
    plugins: {
      timeoutMs: e.PLUGIN_TIMEOUT_SECONDS * 1000,
      memoryBytes: e.PLUGIN_MEMORY_MB * 1024 * 1024,
      sessionsEndpoint: e.PLUGIN_SESSIONS_ENDPOINT,
      warm: e.PLUGIN_WARM_INTERPRETERS,
      concurrency: e.PLUGIN_CONCURRENCY,
      allowNetwork: e.PLUGIN_SANDBOX_ALLOW_NETWORK,
    },
    version,
  };
}

/** The service's own settings, a blank one as absent (an app setting left empty means "not set"). */
function readSettings(env: NodeJS.ProcessEnv): Settings {
  const values: Record<string, unknown> = {};
  for (const [name, { read, fallback }] of Object.entries(SETTINGS)) {
    const given = env[name];
    if (given === undefined || given.trim() === '') {
      values[name] = fallback;
      continue;
    }
    try {
      values[name] = read(given);
    } catch (e) {
      if (!(e instanceof SettingProblem)) throw e;
      throw new ConfigError(`Invalid setting ${name}: ${e.message}`);
    }
  }
  return values as Settings;
}

function storeConfig(e: Settings, dataDir: string): StoreConfig {
  if (e.STORE === 'embedded') return { kind: 'embedded', file: path.join(dataDir, 'store.db') };
  if (!e.COSMOS_ENDPOINT) throw new ConfigError('Missing setting COSMOS_ENDPOINT (required when STORE=cosmos)');
  return {
    kind: 'cosmos',
    endpoint: e.COSMOS_ENDPOINT,
    database: e.COSMOS_DATABASE,
    key: e.COSMOS_KEY,
    clientId: e.AZURE_CLIENT_ID,
  };
}

function storageConfig(e: Settings): StorageConfig {
  if (e.AzureWebJobsStorage) return { kind: 'connection-string', connectionString: e.AzureWebJobsStorage };
  if (e.STORAGE_ACCOUNT_NAME)
    return { kind: 'identity', accountName: e.STORAGE_ACCOUNT_NAME, clientId: e.AZURE_CLIENT_ID };
  return { kind: 'connection-string', connectionString: 'UseDevelopmentStorage=true' };
}

function authConfig(e: Settings, dataDir: string): AuthConfig {
  const given = { AUTH_ISSUER: e.AUTH_ISSUER, AUTH_AUDIENCE: e.AUTH_AUDIENCE, AUTH_JWKS_URI: e.AUTH_JWKS_URI };
  const missing = Object.entries(given)
    .filter(([, v]) => v === undefined)
    .map(([k]) => k);
  if (missing.length === 0 && e.AUTH_ISSUER && e.AUTH_AUDIENCE && e.AUTH_JWKS_URI) {
    return { kind: 'jwks', issuer: e.AUTH_ISSUER, audience: e.AUTH_AUDIENCE, jwksUri: e.AUTH_JWKS_URI };
  }
  if (missing.length < 3) {
    throw new ConfigError(
      `Missing setting ${missing.join(', ')}: set all of AUTH_ISSUER, AUTH_AUDIENCE, AUTH_JWKS_URI or none`,
    );
  }
  return {
    kind: 'local',
    issuer: `http://${e.HOST}:${e.CORE_PORT}/local-idp`,
    audience: LOCAL_AUDIENCE,
    keyFile: path.join(dataDir, 'local-idp', 'signing-key.json'),
  };
}
