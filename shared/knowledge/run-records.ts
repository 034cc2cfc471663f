// A data pipeline run's stored record, as starting a run and the queue worker both use it: its type and
// counts, its partition, an update that stamps each change, and the failure that ends a run for good.
import { dataPipelineRuns, type DataPipelineRunDoc } from '../providers/types/data-pipelines.js';
import { partitionOf, resourcesOf } from '../providers/types/resource-type.js';
import { updateDocument } from '../store/update.js';
import type { GraphOptions } from '../auth/graph.js';
import type { Config } from '../config.js';
import type { ExtractionPool } from './extract-pool.js';
import type { VectorIndex } from './vector-index.js';
import type { Log } from '../log.js';
import type { ModelGateway } from '../models/gateway.js';
import type { CredentialGate } from '../net/credential-gate.js';
import type { Dispatcher } from '../net/undici.js';
import type { ResourceCache } from '../providers/resource-cache.js';
import type { AppSettings } from '../providers/settings.js';
import type { Producer } from '../queues/producer.js';
import type { BlobService } from '../store/storage.js';
import type { DocumentStore } from '../store/types.js';

/** What runs use of the service (the hosts pass the whole of it). */
export interface RunsDeps {
  readonly blobs: BlobService;
  readonly config: Config;
  readonly extraction: ExtractionPool;
  readonly gate: CredentialGate;
  readonly graph: GraphOptions | undefined;
  readonly log: Log;
  readonly models: ModelGateway;
  readonly producer: Producer;
  readonly resourceCache: ResourceCache;
  readonly settings: AppSettings;
  readonly store: DocumentStore;
  readonly userDispatcher: Dispatcher;
  readonly vectors: VectorIndex;
}

export type RunDoc = DataPipelineRunDoc;
export type RunStatus = RunDoc['status'];
export type RunCounts = RunDoc['counts'];
export type RunUsage = NonNullable<RunDoc['usage']>;
export type RunError = RunDoc['errors'][number];

/** Errors kept on a run (a source of a million broken files still has a readable run). */
export const MAX_ERRORS = 500;

export const RUNS_PK = partitionOf(dataPipelineRuns);
export const runRecords = (s: Pick<RunsDeps, 'store'>) => resourcesOf(s.store, dataPipelineRuns);

export const emptyCounts = (): RunCounts => ({
  documents: 0,
  partitions: 0,
  failed_documents: 0,
  added: 0,
  updated: 0,
  unchanged: 0,
  removed: 0,
});

/** A failure of the whole run that another delivery cannot mend. */
export class RunFailure extends Error {}

export const ended = (run: RunDoc) => run.status === 'Completed' || run.status === 'Failed';

/** Changes a run (when `change` answers a patch), stamping the time of the change. */
export async function updateRun(
  s: Pick<RunsDeps, 'store'>,
  id: string,
  change: (run: RunDoc) => Partial<RunDoc> | undefined,
): Promise<RunDoc | undefined> {
  return updateDocument(runRecords(s), { pk: RUNS_PK, id }, (current) => {
    const patch = current && change(current);
    return current && patch ? { ...current, ...patch, updated_on: new Date().toISOString() } : undefined;
  });
}

/** The first line of an error's message, as a run records it. */
export const messageOf = (e: unknown) =>
  (e instanceof Error ? e.message : String(e)).split('\n')[0]?.slice(0, 500) ?? 'unknown error';
