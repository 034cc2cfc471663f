// The environment settings the service reads: each one's name, how its text is read and checked, and its
// value when it is not set. config.ts reads them all at start and assembles the Config from them.
import { LOG_LEVELS } from './log.js';

/** Instance id used when INSTANCE_ID is not set. */
export const DEFAULT_INSTANCE_ID = '7a3c5a2e-4b1f-4c8e-9d6a-0f2b8e1c4d5a';

/** What is wrong with a setting's value, said after its name. */
export class SettingProblem extends Error {}

/** How one setting's text (never blank) becomes its value; a SettingProblem says what is wrong with it. */
type Read<T> = (text: string) => T;

/**
 * A setting: how it is read, and its value when it is not set. Read by plain functions rather than a Zod
 * schema: about 70 settings built as Zod schemas cost 5 to 10 ms of every cold start (`npm run bench --
 * cold-start`), to check values given once.
 */
export interface Setting<T> {
  read: Read<T>;
  fallback: T;
}
function setting<T>(read: Read<T>): Setting<T | undefined>;
function setting<T>(read: Read<T>, fallback: NoInfer<T>): Setting<T>;
function setting<T>(read: Read<T>, fallback?: T): Setting<T | undefined> {
  return { read, fallback };
}

const text: Read<string> = (v) => v;
const matching =
  (pattern: RegExp, rule: string): Read<string> =>
  (v) => {
    if (!pattern.test(v)) throw new SettingProblem(rule);
    return v;
  };
const length =
  (min: number, max: number): Read<string> =>
  (v) => {
    if (v.length < min || v.length > max) throw new SettingProblem(`must be ${min} to ${max} characters`);
    return v;
  };
/** A whole number from `min` to `max` (written as Number() reads it: `30`, `1e3`). */
const int =
  (min: number, max: number): Read<number> =>
  (v) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min || n > max)
      throw new SettingProblem(
        max === Number.MAX_SAFE_INTEGER
          ? `must be a whole number of at least ${min}`
          : `must be a whole number from ${min} to ${max}`,
      );
    return n;
  };
const oneOf =
  <const T extends readonly string[]>(values: T): Read<T[number]> =>
  (v) => {
    if (!values.includes(v)) throw new SettingProblem(`must be one of ${values.join(', ')}`);
    return v;
  };
/** A URL; of one of `schemes` (without the colon) when given. */
const url =
  (schemes?: readonly string[], rule = `must be a URL${schemes ? ` (${schemes.join(' or ')})` : ''}`): Read<string> =>
  (v) => {
    const given = v.trim();
    if (!URL.canParse(given)) throw new SettingProblem(rule);
    if (schemes && !schemes.includes(new URL(given).protocol.slice(0, -1))) throw new SettingProblem(rule);
    return given;
  };
/** Comma-separated entries, each trimmed; empty ones are skipped. */
const List: Read<string[]> = (v) =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
const listOf =
  <T>(read: Read<T>, min = 0): Read<T[]> =>
  (v) => {
    const items = List(v).map(read);
    if (items.length < min) throw new SettingProblem(`must name at least ${min}`);
    return items;
  };

/** A Storage queue name. */
const QueueName = matching(
  /^[a-z0-9](?!.*--)[a-z0-9-]{1,50}[a-z0-9]$/,
  'must be a Storage queue name (3-52 lower-case letters, digits, hyphens)',
);
const Guid = matching(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i, 'must be a GUID');
const Port = int(0, 65535);
const PositiveInt = int(1, Number.MAX_SAFE_INTEGER);
const Flag: Read<boolean> = (v) => {
  if (v === 'true' || v === '1') return true;
  if (v === 'false' || v === '0') return false;
  throw new SettingProblem('must be true, false, 1 or 0');
};
const HttpUrl = url(['http', 'https']);
/** A host name or address as `Host` carries it, without a port. */
const HostName = matching(
  /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$|^\[?[0-9a-f:.]+\]?$/i,
  'each entry must be a host name or address, without scheme or port',
);
/** An origin: scheme://host[:port], nothing after it. */
const Origin: Read<string> = (v) => {
  if (HttpUrl(v) !== new URL(v).origin)
    throw new SettingProblem('each entry must be an origin: scheme://host[:port], no path');
  return v;
};

/** Every setting the service reads, by its environment variable's name. */
export const SETTINGS = {
  INSTANCE_ID: setting(Guid, DEFAULT_INSTANCE_ID),
  HOST: setting(text, '127.0.0.1'),
  CORE_PORT: setting(Port, 7071),
  MANAGEMENT_PORT: setting(Port, 7072),
  DATA_DIR: setting(text, '.data'),
  /** Which APIs the Azure Functions host registers: one Function App per API in Azure. */
  SERVICE_APIS: setting(listOf(oneOf(['core', 'management']), 1), ['core', 'management']),
  /**
   * Whether this process runs the queue workers (async completions, webhooks, data pipelines, evaluations)
   * beside its APIs. Off for the realtime relay's container in Azure, where the Core Function App runs them.
   */
  QUEUE_WORKERS: setting(Flag, true),

  STORE: setting(oneOf(['embedded', 'cosmos']), 'embedded'),
  COSMOS_ENDPOINT: setting(url()),
  COSMOS_DATABASE: setting(text, 'agent-platform'),
  COSMOS_KEY: setting(text),

  AzureWebJobsStorage: setting(text),
  STORAGE_ACCOUNT_NAME: setting(text),
  AZURE_CLIENT_ID: setting(text),

  AUTH_ISSUER: setting(text),
  AUTH_AUDIENCE: setting(text),
  AUTH_JWKS_URI: setting(url()),
  BOOTSTRAP_OWNER_IDS: setting(List),
  /** Domain of agent access tokens' synthetic UPNs: aat_{agent}_{tokenId}@{domain}. */
  INTERNAL_DOMAIN: setting(matching(/^[a-z0-9.-]+$/i, 'must be a domain name'), 'agent-platform.internal'),

  APPLICATIONINSIGHTS_CONNECTION_STRING: setting(text),
  /** Search principals in Microsoft Graph (Entra ID) with the managed identity. */
  GRAPH_ENABLED: setting(Flag, false),
  GRAPH_URL: setting(url(), 'https://graph.microsoft.com'),
  MAX_JSON_BODY_BYTES: setting(PositiveInt, 1024 * 1024),
  MAX_UPLOAD_BYTES: setting(PositiveInt, 20 * 1024 * 1024),
  USER_STORAGE_MAX_BYTES: setting(PositiveInt, 1024 * 1024 * 1024),
  /**
   * Tokens of attachment text one completion gives the model, over all its attachments; the rest is cut with a marker.
   */
  ATTACHMENT_MAX_TOKENS: setting(int(256, 200_000), 20_000),
  MEMORY_MAX_BYTES: setting(PositiveInt, 256 * 1024),
  PACKAGES_CONTAINER: setting(text, 'plugin-packages'),
  PACKAGE_STORE_PRIVATE_CONTAINER: setting(text, 'plugin-store'),
  /** The vendor's read-only package store: a Blob container URL (with a SAS if it is not public). */
  PACKAGE_STORE_PUBLIC_URL: setting(url()),
  MAX_PACKAGE_BYTES: setting(PositiveInt, 50 * 1024 * 1024),
  FILES_CONTAINER: setting(matching(/^[a-z0-9](?:[a-z0-9-]{1,61}[a-z0-9])$/, 'must be a Blob container name'), 'files'),
  MODEL_MAX_RETRIES: setting(int(0, 10), 2),
  /** Largest model answer read (bytes); a larger one is refused with 502 instead of filling memory. */
  MODEL_MAX_RESPONSE_BYTES: setting(PositiveInt, 4 * 1024 * 1024),
  /** Lets user-configured URLs (web data sources, webhooks) be plain http and reach loopback and private networks. */
  ALLOW_PRIVATE_NETWORK: setting(Flag, false),
  /**
   * Hosts (exact names, or `.suffix` for a domain's hosts) of this service's own tool servers: the only places a
   * managed-identity token for the service's own audience (AUTH_AUDIENCE) is sent, over https. Empty: nowhere.
   */
  SERVICE_TOKEN_HOSTS: setting(List, []),
  /** Deadline of reading one document's text (HTML, PDF, Word) in an extraction worker, seconds. */
  EXTRACTION_TIMEOUT_SECONDS: setting(int(1, 600), 60),
  /**
   * Candidates per result the embedded index's sign codes hand to exact re-scoring: more is slower and
   * closer to an exact search (`npm run bench -- knowledge` reports recall and latency at several depths).
   */
  KNOWLEDGE_RESCORING_DEPTH: setting(int(1, 400), 15),
  /** Deadline of one document of a data pipeline run (download, extraction, embedding), seconds. */
  PIPELINE_DOCUMENT_TIMEOUT_SECONDS: setting(int(1, 3600), 300),
  /** Deadline of a whole data pipeline run, seconds: past it the run ends Failed, naming what was not done. */
  PIPELINE_RUN_TIMEOUT_SECONDS: setting(int(10, 86_400), 3600),
  /** Storage queue of async completions; its poison queue is `<name>-poison`. One per instance. */
  ASYNC_COMPLETIONS_QUEUE: setting(QueueName, 'async-completions'),
  /**
   * Seconds a message taken by the local worker stays hidden; renewed while it runs, so a killed worker's
   * message is back on the queue within this time.
   */
  QUEUE_VISIBILITY_TIMEOUT_SECONDS: setting(int(2, 600), 30),
  /** An async operation still InProgress after this long is reported Failed. */
  ASYNC_OPERATION_TIMEOUT_SECONDS: setting(PositiveInt, 1800),
  /** Storage queue of webhook deliveries. */
  WEBHOOKS_QUEUE: setting(QueueName, 'webhook-deliveries'),
  /** Unit of the webhook retry delays (1, 3, 6, 12, ... 192 of it): 5 s retries for about 16 minutes. */
  WEBHOOK_RETRY_BASE_SECONDS: setting(PositiveInt, 5),
  /** Storage queue of data pipeline runs; its poison queue is `<name>-poison`. */
  PIPELINES_QUEUE: setting(QueueName, 'data-pipeline-runs'),
  /** Storage queue of Blob created and deleted events (Event Grid schema) for Event-triggered pipelines. */
  PIPELINE_EVENTS_QUEUE: setting(QueueName, 'pipeline-events'),
  EVALUATIONS_QUEUE: setting(QueueName, 'evaluation-runs'),
  REALTIME_RELAY_URL: setting(url(['ws', 'wss'], 'must be a ws:// or wss:// URL')),
  /** The longest a realtime call may last: the default of agents that set none, and the ceiling of those that do. */
  REALTIME_MAX_CALL_SECONDS: setting(int(10, 86_400), 1800),
  /** How long a semantic cache entry may answer. */
  SEMANTIC_CACHE_TTL_SECONDS: setting(PositiveInt, 3600),
  /** Rounds of tool calls one completion may make before the model must answer. */
  TOOL_MAX_ROUNDS: setting(int(1, 20), 5),
  /** Time all the tool calls of one completion may take together. */
  TOOL_TIME_BUDGET_SECONDS: setting(PositiveInt, 60),
  /** Longest tool result handed to the model (characters); a longer one is cut, and says so. */
  TOOL_RESULT_MAX_CHARS: setting(PositiveInt, 16_000),
  /** Deadline of one plugin or code interpreter call in the Python sandbox. */
  PLUGIN_TIMEOUT_SECONDS: setting(int(1, 600), 30),
  /** Memory of one sandbox call (its interpreter's memory), MiB; the files it writes may take as many bytes again. */
  PLUGIN_MEMORY_MB: setting(int(64, 4096), 256),
  /**
   * Azure Container Apps dynamic sessions: the management endpoint of a Python code interpreter session pool.
   * Set, plugins run there (with the managed identity); unset, in Pyodide processes on this machine.
   */
  PLUGIN_SESSIONS_ENDPOINT: setting(HttpUrl),
  /**
   * Run plugins and the code interpreter on this machine even where the sandbox cannot cut them off from
   * the network (no Linux namespaces): the code they run can then reach every address this machine can.
   */
  PLUGIN_SANDBOX_ALLOW_NETWORK: setting(Flag, false),
  /** Interpreters the local sandbox keeps started ahead of calls (once a plugin has been used). */
  PLUGIN_WARM_INTERPRETERS: setting(int(0, 16), 2),
  /** Sandbox calls running at once on this instance; more wait for one to end. */
  PLUGIN_CONCURRENCY: setting(int(1, 64), 4),
  /** Least severe log records written: debug, info (one access line per request), warn, error or silent. */
  LOG_LEVEL: setting(oneOf(LOG_LEVELS), 'info'),
  /** json (one object per line) or pretty (coloured, for reading); unset: pretty on a terminal, else json. */
  LOG_FORMAT: setting(oneOf(['json', 'pretty'])),
  /**
   * An OpenTelemetry collector (OTLP over HTTP): traces and metrics go there too. The SDK's exporters read
   * it and the other OTEL_EXPORTER_OTLP_* settings (headers, per-signal endpoints) themselves.
   */
  OTEL_EXPORTER_OTLP_ENDPOINT: setting(HttpUrl),
  /** How often metrics are exported (milliseconds), as the OpenTelemetry specification names it. */
  OTEL_METRIC_EXPORT_INTERVAL: setting(int(100, 3_600_000), 60_000),
  /** The service name telemetry reports (OpenTelemetry's own setting). */
  OTEL_SERVICE_NAME: setting(length(1, 200), 'agent-platform'),
  /**
   * Origins (scheme://host[:port]) whose pages may call the APIs from a browser (CORS), comma-separated.
   * Unset: the origin the portal is served from (the Core API's address).
   */
  CORS_ALLOWED_ORIGINS: setting(listOf(Origin)),
  /**
   * The Core API's base URL as clients reach it (behind a proxy, on a custom domain): agent cards and
   * realtime sessions' socket URLs are built from it, never from a request's headers. Unset:
   * http://HOST:CORE_PORT (127.0.0.1 when HOST is a wildcard address).
   */
  CORE_API_URL: setting(HttpUrl),
  /**
   * The Management API's base URL as browsers reach it, for the portal; unset: http://HOST:MANAGEMENT_PORT as above.
   */
  MANAGEMENT_API_URL: setting(HttpUrl),
  /**
   * Further host names requests may carry in `Host`, comma-separated. Loopback names, HOST and the hosts of
   * CORE_API_URL, MANAGEMENT_API_URL and REALTIME_RELAY_URL are always served; a request for any other name
   * is refused (421), so a page whose name resolves to this machine cannot reach it.
   */
  ALLOWED_HOSTS: setting(listOf(HostName)),
  /**
   * Portal sign-in with Entra ID (MSAL): the portal's app registration (client id), its authority, and the API scope it
   * asks for.
   */
  PORTAL_ENTRA_CLIENT_ID: setting(Guid),
  PORTAL_ENTRA_AUTHORITY: setting(url(['https'])),
  PORTAL_API_SCOPE: setting(length(1, 500)),
};

/** Every setting the service reads (the infrastructure test checks that both flavours set them). */
export const SETTING_NAMES: readonly string[] = Object.keys(SETTINGS);

/** Settings for running locally only: in Azure they are absent (ports, data folder, emulator key). */
export const LOCAL_ONLY_SETTINGS: readonly string[] = [
  'HOST',
  'CORE_PORT',
  'MANAGEMENT_PORT',
  'DATA_DIR',
  'COSMOS_KEY',
  'AzureWebJobsStorage',
];

/** The settings' values: each one read, or its fallback. */
export type Settings = { [K in keyof typeof SETTINGS]: (typeof SETTINGS)[K]['fallback'] };
