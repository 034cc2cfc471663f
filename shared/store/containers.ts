// Every container the service uses: name, partition key, TTL and indexed fields. The one source of truth
// for both store adapters and for the infrastructure definitions (a test compares them).

/** One (composite) index: its field paths, and, where only one document type's queries use it, that type. */
export type IndexDefinition = readonly string[] | { readonly fields: readonly string[]; readonly type: string };

export interface ContainerDefinition {
  readonly name: string;
  /** Always `/pk`: each document carries its own partition key value (see Doc). */
  readonly partitionKeyPath: '/pk';
  /** Cosmos default TTL in seconds; -1 turns TTL on without a default (documents set `ttl`); absent is off. */
  readonly defaultTtlSeconds?: number;
  /**
   * Field paths queries filter or sort on, each entry one (composite) index. An index that only the queries
   * of one document `type` use (they filter `type` equal to it) names that type: the embedded store keeps it
   * as a partial index, so a document of another type (every message of a session) costs it no entry.
   * Cosmos DB indexes every document anyway.
   */
  readonly indexes: readonly IndexDefinition[];
  /**
   * Fields analytics aggregates read, filter first: the embedded store keeps them as columns of a facts table
   * with one covering index, so aggregates never touch the documents. Cosmos indexes every path already.
   */
  readonly aggregateFields?: readonly string[];
  /**
   * With aggregateFields: the `type`s of the documents aggregates count (every aggregate of the container
   * filters on one of them); the embedded store keeps no facts of documents of another type. Absent: all.
   */
  readonly aggregateTypes?: readonly string[];
}

const define = (name: string, rest: Omit<ContainerDefinition, 'name' | 'partitionKeyPath'>): ContainerDefinition => ({
  name,
  partitionKeyPath: '/pk',
  ...rest,
});

/** Container definitions by name. */
export const CONTAINERS = {
  /** Management resources of every provider; pk = `{provider}/{resourceType}`, id = resource name. */
  resources: define('resources', { indexes: [['deleted'], ['type']] }),
  /**
   * Sessions with their messages, completion prompts and running turns; pk = owner UPN, so one user's
   * conversations are one partition.
   */
  sessions: define('sessions', {
    indexes: [
      { fields: ['type', 'updated_on'], type: 'Session' },
      ['type', 'session_id', 'timestamp'],
      { fields: ['type', 'created_on'], type: 'Session' },
    ],
    aggregateFields: ['type', 'sender', 'timestamp', 'agent_name', 'upn', 'session_id', 'day', 'hour'],
    // Completion prompts and running turns are never counted.
    aggregateTypes: ['Session', 'Message'],
  }),
  /** Long-running completion operations (the status container); pk = operation id. */
  operations: define('operations', { defaultTtlSeconds: 30 * 24 * 3600, indexes: [['status']] }),
  /** Personalized memory documents; pk = owner UPN. */
  memories: define('memories', { indexes: [] }),
  /** Agent access tokens; pk = agent name. */
  tokens: define('tokens', { indexes: [] }),
  /** Token usage records, one per completion; pk = UPN. */
  usage: define('usage', {
    indexes: [['agent_name', 'timestamp']],
    aggregateFields: [
      'timestamp',
      'agent_name',
      'upn',
      'model_deployment_name',
      'session_id',
      'operation_id',
      'status',
      'total_tokens',
      'duration_ms',
      'cost',
      // Charge-back: cost per cost center, currency and day, tokens by direction, spend per access token.
      'day',
      'cost_center',
      'currency',
      'prompt_tokens',
      'completion_tokens',
      'user_id',
    ],
  }),
  /** Uploaded file records (the bytes live in Blob storage); pk = owner UPN. */
  files: define('files', { indexes: [['agent_name', 'created_on']] }),
  /** Quota counters; pk = quota partition; documents expire by `ttl`. */
  quotas: define('quotas', { defaultTtlSeconds: -1, indexes: [] }),
  /** Tool executions, one per call a completion ran (the analytics' tool figures); pk = UPN. */
  toolRuns: define('toolRuns', {
    indexes: [['agent_name', 'timestamp']],
    aggregateFields: ['timestamp', 'agent_name', 'tool_name', 'operation_id'],
  }),
  /**
   * The events of background streamed completions, for replay on any instance; pk = operation key (owner and
   * operation id), a `head` document and a document per batch of events. Kept an hour after the last write.
   */
  streams: define('streams', { defaultTtlSeconds: 3600, indexes: [['first']] }),
  /** Principals seen signing in, for identity search; pk = 'principals'. */
  principals: define('principals', { indexes: [['upn']] }),
} as const satisfies Record<string, ContainerDefinition>;

export const indexFields = (index: IndexDefinition): readonly string[] => ('fields' in index ? index.fields : index);

export type ContainerName = keyof typeof CONTAINERS;

export const CONTAINER_LIST: readonly ContainerDefinition[] = Object.values(CONTAINERS);
