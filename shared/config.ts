// The one reader of process.env: every setting is parsed and checked here, once, at startup.
import path from 'node:path';
import { z } from 'zod';
import { LOG_LEVELS, type LogLevel } from './log.js';

// Zod compiles a parser for each object schema the first time it parses with it: a millisecond or more
// each, paid on a cold start for these settings and again on the first request of each endpoint, to save
// about a microsecond per later parse. Parsed as written instead, everywhere.
z.config({ jitless: true });

/** Instance id used when INSTANCE_ID is not set. */
export const DEFAULT_INSTANCE_ID = '7a3c5a2e-4b1f-4c8e-9d6a-0f2b8e1c4d5a';

/** A Storage queue name. */
const QueueName = z.string().regex(/^[a-z0-9](?!.*--)[a-z0-9-]{1,50}[a-z0-9]$/, 'must be a Storage queue name (3-52 lower-case letters, digits, hyphens)');
const Guid = z.string().regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i, 'must be a GUID');
const Port = z.coerce.number().int().min(0).max(65535);
const PositiveInt = z.coerce.number().int().positive();
const Flag = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');
const List = z.string().transform((v) => v.split(',').map((s) => s.trim()).filter((s) => s.length > 0));
/** A setting that may be absent; loadConfig reads a blank value as absent. */
const optional = <T extends z.ZodType>(schema: T) => schema.optional();

const Env = z.object({
  INSTANCE_ID: optional(Guid).default(DEFAULT_INSTANCE_ID),
  HOST: optional(z.string()).default('127.0.0.1'),
  CORE_PORT: optional(Port).default(7071),
  MANAGEMENT_PORT: optional(Port).default(7072),
  DATA_DIR: optional(z.string()).default('.data'),
  /** Which APIs the Azure Functions host registers: one Function App per API in Azure. */
  SERVICE_APIS: optional(z.string().pipe(List).pipe(z.array(z.enum(['core', 'management'])).min(1))).default([
    'core',
    'management',
  ]),
  /**
   * Whether this process runs the queue workers (async completions, webhooks, data pipelines, evaluations)
   * beside its APIs. Off for the realtime relay's container in Azure, where the Core Function App runs them.
   */
  QUEUE_WORKERS: optional(Flag).default(true),

  STORE: optional(z.enum(['embedded', 'cosmos'])).default('embedded'),
  COSMOS_ENDPOINT: optional(z.url()),
  COSMOS_DATABASE: optional(z.string()).default('agent-platform'),
  COSMOS_KEY: optional(z.string()),

  AzureWebJobsStorage: optional(z.string()),
  STORAGE_ACCOUNT_NAME: optional(z.string()),
  AZURE_CLIENT_ID: optional(z.string()),

  AUTH_ISSUER: optional(z.string()),
  AUTH_AUDIENCE: optional(z.string()),
  AUTH_JWKS_URI: optional(z.url()),
  BOOTSTRAP_OWNER_IDS: optional(List),
  /** Domain of agent access tokens' synthetic UPNs: aat_{agent}_{tokenId}@{domain}. */
  INTERNAL_DOMAIN: optional(z.string().regex(/^[a-z0-9.-]+$/i, 'must be a domain name')).default('agent-platform.internal'),

  APPLICATIONINSIGHTS_CONNECTION_STRING: optional(z.string()),
  /** Search principals in Microsoft Graph (Entra ID) with the managed identity. */
  GRAPH_ENABLED: optional(Flag).default(false),
  GRAPH_URL: optional(z.url()).default('https://graph.microsoft.com'),
  MAX_JSON_BODY_BYTES: optional(PositiveInt).default(1024 * 1024),
  MAX_UPLOAD_BYTES: optional(PositiveInt).default(20 * 1024 * 1024),
  /** Tokens of attachment text one completion gives the model, over all its attachments; the rest is cut with a marker. */
  ATTACHMENT_MAX_TOKENS: optional(z.coerce.number().int().min(256).max(200_000)).default(20_000),
  MEMORY_MAX_BYTES: optional(PositiveInt).default(256 * 1024),
  PACKAGES_CONTAINER: optional(z.string()).default('plugin-packages'),
  PACKAGE_STORE_PRIVATE_CONTAINER: optional(z.string()).default('plugin-store'),
  /** The vendor's read-only package store: a Blob container URL (with a SAS if it is not public). */
  PACKAGE_STORE_PUBLIC_URL: optional(z.url()),
  MAX_PACKAGE_BYTES: optional(PositiveInt).default(50 * 1024 * 1024),
  FILES_CONTAINER: optional(z.string().regex(/^[a-z0-9](?:[a-z0-9-]{1,61}[a-z0-9])$/, 'must be a Blob container name')).default('files'),
  MODEL_MAX_RETRIES: optional(z.coerce.number().int().min(0).max(10)).default(2),
  /** Largest model answer read (bytes); a larger one is refused with 502 instead of filling memory. */
  MODEL_MAX_RESPONSE_BYTES: optional(PositiveInt).default(4 * 1024 * 1024),
  /** Lets user-configured URLs (web data sources, webhooks) be plain http and reach loopback and private networks. */
  ALLOW_PRIVATE_NETWORK: optional(Flag).default(false),
  /**
   * Hosts (exact names, or `.suffix` for a domain's hosts) of this service's own tool servers: the only places a
   * managed-identity token for the service's own audience (AUTH_AUDIENCE) is sent, over https. Empty: nowhere.
   */
  SERVICE_TOKEN_HOSTS: optional(List).default([]),
  /** Deadline of reading one document's text (HTML, PDF, Word) in an extraction worker, seconds. */
  EXTRACTION_TIMEOUT_SECONDS: optional(z.coerce.number().int().min(1).max(600)).default(60),
  /**
   * Candidates per result the embedded index's sign codes hand to exact re-scoring: more is slower and
   * closer to an exact search (`npm run bench -- knowledge` reports recall and latency at several depths).
   */
  KNOWLEDGE_RESCORING_DEPTH: optional(z.coerce.number().int().min(1).max(400)).default(15),
  /** Deadline of one document of a data pipeline run (download, extraction, embedding), seconds. */
  PIPELINE_DOCUMENT_TIMEOUT_SECONDS: optional(z.coerce.number().int().min(1).max(3600)).default(300),
  /** Deadline of a whole data pipeline run, seconds: past it the run ends Failed, naming what was not done. */
  PIPELINE_RUN_TIMEOUT_SECONDS: optional(z.coerce.number().int().min(10).max(86_400)).default(3600),
  /** Storage queue of async completions; its poison queue is `<name>-poison`. One per instance. */
  ASYNC_COMPLETIONS_QUEUE: optional(QueueName).default('async-completions'),
  /**
   * Seconds a message taken by the local worker stays hidden; renewed while it runs, so a killed worker's
   * message is back on the queue within this time.
   */
  QUEUE_VISIBILITY_TIMEOUT_SECONDS: optional(z.coerce.number().int().min(2).max(600)).default(30),
  /** An async operation still InProgress after this long is reported Failed. */
  ASYNC_OPERATION_TIMEOUT_SECONDS: optional(PositiveInt).default(1800),
  /** Storage queue of webhook deliveries. */
  WEBHOOKS_QUEUE: optional(QueueName).default('webhook-deliveries'),
  /** Unit of the webhook retry delays (1, 3, 6, 12, ... 192 of it): 5 s retries for about 16 minutes. */
  WEBHOOK_RETRY_BASE_SECONDS: optional(PositiveInt).default(5),
  /** Storage queue of data pipeline runs; its poison queue is `<name>-poison`. */
  PIPELINES_QUEUE: optional(QueueName).default('data-pipeline-runs'),
  /** Storage queue of Blob created and deleted events (Event Grid schema) for Event-triggered pipelines. */
  PIPELINE_EVENTS_QUEUE: optional(QueueName).default('pipeline-events'),
  EVALUATIONS_QUEUE: optional(QueueName).default('evaluation-runs'),
  REALTIME_RELAY_URL: optional(z.url({ protocol: /^wss?$/, error: 'must be a ws:// or wss:// URL' })),
  /** How long a semantic cache entry may answer. */
  SEMANTIC_CACHE_TTL_SECONDS: optional(PositiveInt).default(3600),
  /** Rounds of tool calls one completion may make before the model must answer. */
  TOOL_MAX_ROUNDS: optional(z.coerce.number().int().min(1).max(20)).default(5),
  /** Time all the tool calls of one completion may take together. */
  TOOL_TIME_BUDGET_SECONDS: optional(PositiveInt).default(60),
  /** Longest tool result handed to the model (characters); a longer one is cut, and says so. */
  TOOL_RESULT_MAX_CHARS: optional(PositiveInt).default(16_000),
  /** Deadline of one plugin or code interpreter call in the Python sandbox. */
  PLUGIN_TIMEOUT_SECONDS: optional(z.coerce.number().int().min(1).max(600)).default(30),
  /** Memory of one sandbox call (its interpreter's memory), MiB; the files it writes may take as many bytes again. */
  PLUGIN_MEMORY_MB: optional(z.coerce.number().int().min(64).max(4096)).default(256),
  /**
   * Azure Container Apps dynamic sessions: the management endpoint of a Python code interpreter session pool.
   * Set, plugins run there (with the managed identity); unset, in Pyodide worker threads on this machine.
   */
  PLUGIN_SESSIONS_ENDPOINT: optional(z.url({ protocol: /^https?$/ })),
  /** Interpreters the local sandbox keeps started ahead of calls (once a plugin has been used). */
  PLUGIN_WARM_INTERPRETERS: optional(z.coerce.number().int().min(0).max(16)).default(2),
  /** Sandbox calls running at once on this instance; more wait for one to end. */
  PLUGIN_CONCURRENCY: optional(z.coerce.number().int().min(1).max(64)).default(4),
  /** Least severe log records written: debug, info (one access line per request), warn, error or silent. */
  LOG_LEVEL: optional(z.enum(LOG_LEVELS)).default('info'),
  /** json (one object per line) or pretty (coloured, for reading); unset: pretty on a terminal, else json. */
  LOG_FORMAT: optional(z.enum(['json', 'pretty'])),
  /**
   * An OpenTelemetry collector (OTLP over HTTP): traces and metrics go there too. The SDK's exporters read
   * it and the other OTEL_EXPORTER_OTLP_* settings (headers, per-signal endpoints) themselves.
   */
  OTEL_EXPORTER_OTLP_ENDPOINT: optional(z.url({ protocol: /^https?$/ })),
  /** How often metrics are exported (milliseconds), as the OpenTelemetry specification names it. */
  OTEL_METRIC_EXPORT_INTERVAL: optional(z.coerce.number().int().min(100).max(3_600_000)).default(60_000),
  /** The service name telemetry reports (OpenTelemetry's own setting). */
  OTEL_SERVICE_NAME: optional(z.string().min(1).max(200)).default('agent-platform'),
  /**
   * Origins (scheme://host[:port]) whose pages may call the APIs from a browser (CORS), comma-separated.
   * Unset: the origin the portal is served from (the Core API's address).
   */
  CORS_ALLOWED_ORIGINS: optional(List.pipe(z.array(z.url({ protocol: /^https?$/ }).refine((u) => new URL(u).origin === u, 'each entry must be an origin: scheme://host[:port], no path')))),
  /** The Management API's base URL as browsers reach it, for the portal; unset: the Core API's host on MANAGEMENT_PORT. */
  MANAGEMENT_API_URL: optional(z.url({ protocol: /^https?$/ })),
  /** Portal sign-in with Entra ID (MSAL): the portal's app registration (client id), its authority, and the API scope it asks for. */
  PORTAL_ENTRA_CLIENT_ID: optional(z.uuid()),
  PORTAL_ENTRA_AUTHORITY: optional(z.url({ protocol: /^https$/ })),
  PORTAL_API_SCOPE: optional(z.string().min(1).max(500)),
});

/** Every setting the service reads (the infrastructure test checks that both flavours set them). */
export const SETTING_NAMES: readonly string[] = Object.keys(Env.shape);

/** Settings for running locally only: in Azure they are absent (ports, data folder, emulator key). */
export const LOCAL_ONLY_SETTINGS: readonly string[] = ['HOST', 'CORE_PORT', 'MANAGEMENT_PORT', 'DATA_DIR', 'COSMOS_KEY', 'AzureWebJobsStorage'];

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
  portal: { corsOrigins: readonly string[] | undefined; managementUrl: string | undefined; entra: { clientId: string; authority: string; scope: string } | undefined };
  /** Client id of the user-assigned managed identity (Azure). */
  azureClientId: string | undefined;
  /** Microsoft Graph base URL when principal search uses Graph. */
  graphUrl: string | undefined;
  maxJsonBodyBytes: number;
  maxUploadBytes: number;
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
  knowledge: { queue: string; eventsQueue: string; cacheTtlSeconds: number; file: string; rescoringDepth: number; extractionTimeoutMs: number; documentTimeoutMs: number; runTimeoutMs: number };
  tools: { maxRounds: number; timeBudgetMs: number; resultMaxChars: number };
  plugins: { timeoutMs: number; memoryBytes: number; sessionsEndpoint: string | undefined; warm: number; concurrency: number };
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
export const SECRET_NAME_RULE = 'must name a secret: an app setting or environment variable whose name starts with SVC_SECRET_ (A-Z, 0-9, _)';

/** The value of a secret named by configuration; undefined for a name outside the allowed set. */
export function readSecret(name: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (!SECRET_NAME.test(name)) return undefined;
  const value = env[name];
  return value === undefined || value === '' ? undefined : value;
}

/** Parses the environment; throws ConfigError naming the first bad or missing setting. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, version = '0.0.0'): Config {
  // Only the service's own settings, a blank one as absent (an app setting left empty means "not set").
  const settings = Object.fromEntries(SETTING_NAMES.map((name) => [name, env[name]?.trim() === '' ? undefined : env[name]]));
  const parsed = Env.safeParse(settings);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const key = issue?.path.join('.') ?? 'environment';
    throw new ConfigError(`Invalid setting ${key}: ${issue?.message ?? 'invalid'}`);
  }
  const e = parsed.data;
  if (e.CORE_PORT !== 0 && e.CORE_PORT === e.MANAGEMENT_PORT) throw new ConfigError(`CORE_PORT and MANAGEMENT_PORT are both ${e.CORE_PORT}: each API needs its own port`);
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
    portal: {
      corsOrigins: e.CORS_ALLOWED_ORIGINS,
      managementUrl: e.MANAGEMENT_API_URL?.replace(/\/+$/, ''),
      entra: e.PORTAL_ENTRA_CLIENT_ID ? { clientId: e.PORTAL_ENTRA_CLIENT_ID, authority: e.PORTAL_ENTRA_AUTHORITY ?? 'https://login.microsoftonline.com/organizations', scope: e.PORTAL_API_SCOPE ?? `${e.AUTH_AUDIENCE ?? LOCAL_AUDIENCE}/.default` } : undefined,
    },
    otlp: e.OTEL_EXPORTER_OTLP_ENDPOINT ? { endpoint: e.OTEL_EXPORTER_OTLP_ENDPOINT, metricIntervalMs: e.OTEL_METRIC_EXPORT_INTERVAL, serviceName: e.OTEL_SERVICE_NAME } : undefined,
    azureClientId: e.AZURE_CLIENT_ID,
    graphUrl: e.GRAPH_ENABLED ? e.GRAPH_URL : undefined,
    maxJsonBodyBytes: e.MAX_JSON_BODY_BYTES,
    maxUploadBytes: e.MAX_UPLOAD_BYTES,
    attachmentMaxTokens: e.ATTACHMENT_MAX_TOKENS,
    memoryMaxBytes: e.MEMORY_MAX_BYTES,
    packages: { container: e.PACKAGES_CONTAINER, privateStore: e.PACKAGE_STORE_PRIVATE_CONTAINER, publicStoreUrl: e.PACKAGE_STORE_PUBLIC_URL, maxBytes: e.MAX_PACKAGE_BYTES },
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
    tools: { maxRounds: e.TOOL_MAX_ROUNDS, timeBudgetMs: e.TOOL_TIME_BUDGET_SECONDS * 1000, resultMaxChars: e.TOOL_RESULT_MAX_CHARS },
    plugins: {
      timeoutMs: e.PLUGIN_TIMEOUT_SECONDS * 1000,
      memoryBytes: e.PLUGIN_MEMORY_MB * 1024 * 1024,
      sessionsEndpoint: e.PLUGIN_SESSIONS_ENDPOINT,
      warm: e.PLUGIN_WARM_INTERPRETERS,
      concurrency: e.PLUGIN_CONCURRENCY,
    },
    version,
  };
}

type Parsed = z.infer<typeof Env>;

function storeConfig(e: Parsed, dataDir: string): StoreConfig {
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

function storageConfig(e: Parsed): StorageConfig {
  if (e.AzureWebJobsStorage) return { kind: 'connection-string', connectionString: e.AzureWebJobsStorage };
  if (e.STORAGE_ACCOUNT_NAME) return { kind: 'identity', accountName: e.STORAGE_ACCOUNT_NAME, clientId: e.AZURE_CLIENT_ID };
  return { kind: 'connection-string', connectionString: 'UseDevelopmentStorage=true' };
}

function authConfig(e: Parsed, dataDir: string): AuthConfig {
  const given = { AUTH_ISSUER: e.AUTH_ISSUER, AUTH_AUDIENCE: e.AUTH_AUDIENCE, AUTH_JWKS_URI: e.AUTH_JWKS_URI };
  const missing = Object.entries(given).filter(([, v]) => v === undefined).map(([k]) => k);
  if (missing.length === 0 && e.AUTH_ISSUER && e.AUTH_AUDIENCE && e.AUTH_JWKS_URI) {
    return { kind: 'jwks', issuer: e.AUTH_ISSUER, audience: e.AUTH_AUDIENCE, jwksUri: e.AUTH_JWKS_URI };
  }
  if (missing.length < 3) {
    throw new ConfigError(`Missing setting ${missing.join(', ')}: set all of AUTH_ISSUER, AUTH_AUDIENCE, AUTH_JWKS_URI or none`);
  }
  return {
    kind: 'local',
    issuer: `http://${e.HOST}:${e.CORE_PORT}/local-idp`,
    audience: LOCAL_AUDIENCE,
    keyFile: path.join(dataDir, 'local-idp', 'signing-key.json'),
  };
}
