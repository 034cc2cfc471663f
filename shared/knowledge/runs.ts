// Data pipeline runs: `process` records a Pending run and queues it; the queue worker lists
// the source's documents, extracts, partitions, embeds and indexes those whose content changed, removes those
// gone from the source, and records counts and per-document errors. A run is safe to deliver more than once:
// documents already indexed with the same content hash are skipped, and replacing a document's partitions is
// atomic per document, so a run cut short and delivered again finishes with no duplicates.
import { createHash, randomUUID } from 'node:crypto';
import { money } from '../models/pricing.js';
import type { Principal } from '../auth/principal.js';
import { badRequest, notFound } from '../errors.js';
import { UpstreamError } from '../models/upstream-errors.js';
import { objectIdOf, partitionOf, resourceId, resourcesOf } from '../providers/types/resource-type.js';
import {
  type DataPipelineDoc,
  type DataPipelineRunDoc,
  dataPipelineRuns,
  dataPipelines,
  type DataSourceDoc,
  dataSources,
} from '../providers/types/catalog.js';
import { MAX_DEQUEUE_COUNT, type QueueDelivery } from '../queues/producer.js';
import { Shares } from '../queues/shares.js';
import type { RunMessage } from '../queues/messages.js';
import { updateDocument } from '../store/update.js';
import { forgetAnswersFrom } from './cache.js';
import { embedderFor, type Embedder } from './embedder.js';
import { planOf } from './stages.js';
import { screen } from '../shielding/plugins.js';
import { ExtractionError, extractText, formatOf } from './extract.js';
import {
  DocumentError,
  listDocuments,
  READABLE_SOURCE_TYPES,
  sourceProblem,
  sourceSettings,
  type SourceDocument,
} from './sources.js';
import { deletedSources, sharePointDocuments } from './sharepoint.js';
import { groupsOf, type IndexedEntry } from './vector-index.js';
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

/** What this module uses of the service (the hosts pass the whole of it). */
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
type RunUsage = NonNullable<RunDoc['usage']>;
export type RunError = RunDoc['errors'][number];

/** Documents read, extracted and embedded at once within one run. */
const DOCUMENT_CONCURRENCY = 4;
/** Errors kept on a run (a source of a million broken files still has a readable run). */
const MAX_ERRORS = 500;

const RUNS_PK = partitionOf(dataPipelineRuns);
const runs = (s: RunsDeps) => resourcesOf(s.store, dataPipelineRuns);
const emptyCounts = (): RunCounts => ({
  documents: 0,
  partitions: 0,
  failed_documents: 0,
  added: 0,
  updated: 0,
  unchanged: 0,
  removed: 0,
});

/** A failure of the whole run that another delivery cannot mend. */
class RunFailure extends Error {}

/** Checks what a run needs before it is queued: the pipeline, a source the service can read, the embedding model. */
async function prerequisites(
  s: RunsDeps,
  pipeline: DataPipelineDoc,
): Promise<{ source: DataSourceDoc; embedder: Embedder }> {
  const source = await s.resourceCache.get(pipeline.data_source_object_id, dataSources);
  if (!source) throw new RunFailure(`data source ${pipeline.data_source_object_id} does not exist`);
  if (!READABLE_SOURCE_TYPES.some((t) => t === source.data_source_type)) {
    throw new RunFailure(
      `${source.data_source_type} data sources are definitions only for now: processing reads ` +
        `${READABLE_SOURCE_TYPES.join(' and ')} sources`,
    );
  }
  const problem = sourceProblem(sourceSettings(source));
  if (problem) throw new RunFailure(problem);
  const plan = planOf(pipeline);
  const embedder = await embedderFor(s, plan.embeddingModel, plan.embeddingDimensions);
  if (typeof embedder === 'string') throw new RunFailure(embedder);
  return { source, embedder };
}

/** `POST .../dataPipelines/{name}/process` (the caller may write the pipeline): records a Pending run and queues it. */
export async function startRun(
  s: RunsDeps,
  principal: Principal,
  pipelineName: string,
): Promise<{ object_id: string }> {
  const pipelineId = objectIdOf(s.config.instanceId, dataPipelines, pipelineName);
  const pipeline = await s.resourceCache.get(pipelineId, dataPipelines);
  if (!pipeline) throw notFound(`data-pipeline ${pipelineName} not found`);
  return queueRun(s, pipeline, randomUUID(), principal.upn, { refuse: true });
}

/**
 * Records a run of the pipeline named `name` and queues it. A run that cannot start (its source or model
 * unusable) is a 400 when `refuse` (someone asked for it), else recorded Failed with the reason (a scheduled
 * due time). Throws ConflictError when a run of that name exists (a due time another instance started).
 */
export async function queueRun(
  s: RunsDeps,
  pipeline: DataPipelineDoc,
  name: string,
  by: string,
  options: { refuse?: boolean; documents?: string[] } = {},
): Promise<{ object_id: string }> {
  const problem = await prerequisites(s, pipeline).then(
    () => undefined,
    (e: unknown) => {
      if (e instanceof RunFailure) return e.message;
      throw e;
    },
  );
  if (problem && options.refuse) throw badRequest(`The pipeline cannot run: ${problem}`);
  const now = new Date().toISOString();
  const run: RunDoc = {
    id: resourceId(name),
    pk: RUNS_PK,
    type: dataPipelineRuns.type,
    name,
    object_id: objectIdOf(s.config.instanceId, dataPipelineRuns, name),
    data_pipeline_object_id: pipeline.object_id,
    status: problem ? 'Failed' : 'Pending',
    started_on: null,
    completed_on: problem ? now : null,
    counts: emptyCounts(),
    errors: problem ? [{ source: '', message: `The pipeline cannot run: ${problem}` }] : [],
    ...(options.documents ? { documents: options.documents } : {}),
    created_on: now,
    created_by: by,
    updated_on: now,
    updated_by: by,
    deleted: false,
  };
  await runs(s).create(run);
  if (!problem) await s.producer.send(s.config.knowledge.queue, { run: run.id } satisfies RunMessage);
  return { object_id: run.object_id };
}

const ended = (run: RunDoc) => run.status === 'Completed' || run.status === 'Failed';

async function update(
  s: RunsDeps,
  id: string,
  change: (run: RunDoc) => Partial<RunDoc> | undefined,
): Promise<RunDoc | undefined> {
  return updateDocument(runs(s), RUNS_PK, id, (current) => {
    const patch = current && change(current);
    return current && patch ? { ...current, ...patch, updated_on: new Date().toISOString() } : undefined;
  });
}

const messageOf = (e: unknown) =>
  (e instanceof Error ? e.message : String(e)).split('\n')[0]?.slice(0, 500) ?? 'unknown error';

/** The queue worker of runs. Throws to have the message delivered again (transient failures, shutdown). */
export async function runPipeline(message: RunMessage, delivery: QueueDelivery, s: RunsDeps): Promise<void> {
  const id = message.run;
  // Runs of one data source hold only their share of the workers; past it the run waits in the queue, Pending.
  const pending = await runs(s).read(RUNS_PK, id);
  if (!pending || ended(pending)) return;
  const source =
    (await s.resourceCache.get(pending.data_pipeline_object_id, dataPipelines))?.data_source_object_id ??
    pending.data_pipeline_object_id;
  const leave = sourceShares.enter(source.toLowerCase());
  if (!leave) {
    await s.producer.send(s.config.knowledge.queue, message, { visibilityTimeoutSeconds: 2 });
    return;
  }
  try {
    await runWithinShare(id, delivery, s);
  } finally {
    leave();
  }
}

/** Runs of one data source at once on this instance: a source of slow documents cannot take every worker. */
const sourceShares = new Shares(2);

async function runWithinShare(id: string, delivery: QueueDelivery, s: RunsDeps): Promise<void> {
  const run = await update(s, id, (r) =>
    ended(r) ? undefined : { status: 'InProgress', started_on: r.started_on ?? new Date().toISOString() },
  );
  if (!run || ended(run)) return;
  try {
    const { counts, errors, cut, index, delta, usage } = await execute(s, run, delivery.signal);
    // Cached answers may quote what changed: the agents searching the index answer afresh.
    if (counts.added + counts.updated + counts.removed > 0) await forgetAnswersFrom(s, index);
    await update(s, id, () => ({
      status: cut ? 'Failed' : 'Completed',
      completed_on: new Date().toISOString(),
      counts,
      usage,
      errors,
      reading: undefined,
      ...(delta && !cut ? { delta } : {}),
    }));
  } catch (e) {
    if (delivery.signal?.aborted) {
      // Stopped on purpose (shutdown): what was being read did not crash anything.
      await update(s, id, () => ({ reading: undefined })).catch(() => undefined);
      throw e;
    }
    const final = e instanceof RunFailure || delivery.dequeueCount >= MAX_DEQUEUE_COUNT;
    if (!final) throw e;
    s.log.warn('A data pipeline run failed', { run: id, error: messageOf(e) });
    await failRun(
      s,
      id,
      e instanceof RunFailure
        ? e.message
        : `the run failed ${delivery.dequeueCount} times; the last error: ${messageOf(e)}`,
    );
  }
}

/** Marks a run Failed (a message that reached the poison queue, or a failure no retry mends). */
export async function failRun(s: RunsDeps, id: string, reason: string): Promise<void> {
  await update(s, id, (r) =>
    ended(r)
      ? undefined
      : {
          status: 'Failed',
          completed_on: new Date().toISOString(),
          errors: [...r.errors, { source: '', message: reason }],
          reading: undefined,
        },
  );
}

/** The poison queue's handler: a run whose message was given up ends Failed instead of staying InProgress. */
export async function failPoisonedRun({ run: id }: RunMessage, _delivery: QueueDelivery, s: RunsDeps): Promise<void> {
  await failRun(s, id, 'the run could not be completed after several attempts');
}

/** Failures of one document: reported on the run, the other documents go on. */
const documentFailure = (e: unknown) =>
  e instanceof Deadline ||
  e instanceof DocumentError ||
  e instanceof ExtractionError ||
  (e instanceof UpstreamError && e.permanent) ||
  e instanceof RangeError;

/** Why a document's work was cut: its own deadline, or the run's. */
class Deadline extends Error {}

/** Where the pipeline's last completed run left a SharePoint source's changes. */
async function lastDelta(s: RunsDeps, pipelineId: string): Promise<RunDoc['delta']> {
  const { items } = await runs(s).query({
    partition: RUNS_PK,
    where: [
      { field: 'data_pipeline_object_id', op: 'eq', value: pipelineId },
      { field: 'status', op: 'eq', value: 'Completed' },
    ],
    orderBy: [{ field: 'completed_on', direction: 'desc' }],
    limit: 1,
  });
  return items[0]?.delta;
}

async function execute(
  s: RunsDeps,
  run: RunDoc,
  signal: AbortSignal | undefined,
): Promise<{
  counts: RunCounts;
  usage: RunUsage;
  errors: RunError[];
  cut: boolean;
  index: string;
  delta?: RunDoc['delta'];
}> {
  const { documentTimeoutMs, runTimeoutMs } = s.config.knowledge;
  // The run's deadline counts from its first delivery: a redelivery does not extend it.
  const runLeftMs = Date.parse(run.started_on ?? new Date().toISOString()) + runTimeoutMs - Date.now();
  const runDeadline = AbortSignal.timeout(Math.max(0, runLeftMs));
  // Documents a previous delivery was reading when its process stopped: not read again (they may be why).
  const crashed = new Set(run.reading ?? []);
  const pipeline = await s.resourceCache.get(run.data_pipeline_object_id, dataPipelines);
  if (!pipeline) throw new RunFailure('the data pipeline was deleted');
  const { source, embedder } = await prerequisites(s, pipeline);
  const plan = planOf(pipeline);
  const index = plan.index;
  // What the partitions depend on besides the content: changing any of it re-indexes every document.
  const settings = `${embedder.version}|${plan.sizeTokens}|${plan.overlapTokens}|${plan.partitioner}|${plan.shields.join(',')}`;

  const indexed = new Map<string, IndexedEntry>();
  for (const d of await s.vectors.documents(index)) if (d.origin === pipeline.object_id) indexed.set(d.source, d);
  // An event-triggered run reads only the documents its event named: listed by their own names. A
  // SharePoint source's later runs read only what changed, and remove only what Graph reports deleted.
  const only = run.documents ? new Set(run.documents) : undefined;
  let documents: SourceDocument[];
  let deleted: string[] | undefined;
  let delta: RunDoc['delta'];
  try {
    const from = sourceSettings(source);
    if (from.data_source_type === 'SharePointOnline') {
      const last = await lastDelta(s, pipeline.object_id);
      const site = { site_url: from.site_url ?? '', document_libraries: from.document_libraries ?? [] };
      const listing = await sharePointDocuments(
        s,
        s.graph,
        site,
        pipeline.source_paths,
        last?.settings === settings ? last.links : undefined,
        runDeadline,
      );
      documents = listing.documents;
      if (!listing.complete) deleted = deletedSources(listing.removed, indexed.keys());
      delta = { settings, links: listing.cursors };
    } else {
      documents = only
        ? (
            await listDocuments(
              s,
              from,
              [...only].map((d) => (from.containers.length > 1 ? d.slice(d.indexOf('/') + 1) : d)),
            )
          ).filter((d) => only.has(d.source))
        : await listDocuments(s, from, pipeline.source_paths);
    }
  } catch (e) {
    if (e instanceof DocumentError) throw new RunFailure(e.message);
    throw e;
  }

  const counts = emptyCounts();
  const usage: RunUsage = { embedding_tokens: 0, cost: 0, currency: null };
  const errors: RunError[] = [];
  const seen = new Set<string>();
  const signalOrNever = signal ?? new AbortController().signal;

  const one = async (doc: SourceDocument) => {
    const old = indexed.get(doc.source);
    const own = AbortSignal.timeout(documentTimeoutMs);
    const docSignal = AbortSignal.any([signalOrNever, own, runDeadline]);
    let recorded = false;
    try {
      if (runDeadline.aborted) throw new Deadline(`not read: the run's deadline (${runTimeoutMs / 1000} s) passed`);
      if (crashed.has(doc.source))
        throw new Deadline('skipped: the service stopped while reading this document in an earlier attempt');
      await update(s, run.id, (r) => ({ reading: [...(r.reading ?? []), doc.source] }));
      recorded = true;
      const read = await doc.read(docSignal);
      if (read === 'gone') return;
      seen.add(doc.source);
      counts.documents++;
      // Who may read it is part of what was indexed: a change of groups alone writes the document again.
      const groups = groupsOf(doc);
      const digest = createHash('sha256').update(settings).update('\n').update(read.bytes);
      if (groups.length > 0) digest.update(`\ngroups:${groups.join(',')}`);
      const hash = digest.digest('hex');
      if (old?.hash === hash) {
        counts.unchanged++;
        counts.partitions += old.partitions;
        return;
      }
      const format = formatOf(doc.source, read.contentType);
      if (!format) throw new ExtractionError('the document type is not indexed (.txt, .md, .html, .pdf and .docx are)');
      const { title, text } = await extractText(s.extraction, read.bytes, format, doc.file_name, docSignal);
      // The tokenizer's tables are large: loaded by the first run, not at start-up.
      const { partitionMarkdown, partitionText } = await import('./partition.js');
      const cut = plan.partitioner === 'markdown' ? partitionMarkdown : partitionText;
      const all = cut(text, { sizeTokens: plan.sizeTokens, overlapTokens: plan.overlapTokens });
      if (all.length === 0) throw new ExtractionError('the document has no text');
      const parts = plan.shields.length > 0 ? await shielded(s, plan.shields, all, doc.source, errors, docSignal) : all;
      if (parts.length === 0) throw new ExtractionError('every partition of the document was blocked by shielding');
      const embedded = await embedder.embed(parts, docSignal);
      const { vectors } = embedded;
      usage.embedding_tokens += embedded.promptTokens;
      usage.cost = money(usage.cost + embedded.cost);
      usage.currency = embedded.currency;
      await s.vectors.replaceDocument(
        index,
        {
          source: doc.source,
          file_name: doc.file_name,
          title,
          origin: pipeline.object_id,
          hash,
          allowed_groups: groups,
        },
        parts.map((text, i) => ({ text, vector: vectors[i] ?? [] })),
      );
      counts[old ? 'updated' : 'added']++;
      counts.partitions += parts.length;
    } catch (caught) {
      if (signal?.aborted) throw caught;
      // A deadline aborts whatever the document was doing: reported as the deadline, for this document alone.
      const e =
        runDeadline.aborted && !(caught instanceof Deadline)
          ? new Deadline(`not finished: the run's deadline (${runTimeoutMs / 1000} s) passed`)
          : own.aborted
            ? new Deadline(`the document took longer than ${documentTimeoutMs / 1000} s`)
            : caught;
      if (!documentFailure(e)) throw e;
      // A document that cannot be read counts as found, and its last good version is not removed.
      if (!seen.has(doc.source)) {
        seen.add(doc.source);
        counts.documents++;
      }
      counts.failed_documents++;
      // The last good version stays searchable until the document can be read again.
      if (old) counts.partitions += old.partitions;
      if (errors.length < MAX_ERRORS) errors.push({ source: doc.source, message: messageOf(e) });
    } finally {
      if (recorded) await update(s, run.id, (r) => ({ reading: (r.reading ?? []).filter((x) => x !== doc.source) }));
    }
  };

  let next = 0;
  const worker = async () => {
    for (let doc = documents[next++]; doc; doc = documents[next++]) await one(doc);
  };
  await Promise.all(Array.from({ length: Math.min(DOCUMENT_CONCURRENCY, documents.length) }, worker));

  // A run cut by its deadline has not seen every document: nothing is removed on its word.
  if (runDeadline.aborted) return { counts, usage, errors, cut: true, index };
  // Documents this pipeline indexed that the source no longer has (or that answered 404): of an event's run,
  // only those it named; of an incremental listing, those reported deleted.
  for (const sourceName of deleted ?? indexed.keys()) {
    if (seen.has(sourceName) || (only && !only.has(sourceName))) continue;
    await s.vectors.removeDocument(index, sourceName);
    counts.removed++;
  }
  return { counts, usage, errors, cut: false, index, ...(delta ? { delta } : {}) };
}

/** The partitions the shielding plugins allow (ShieldStage); each blocked one is named in the run's errors. */
async function shielded(
  s: RunsDeps,
  plugins: readonly string[],
  parts: readonly string[],
  source: string,
  errors: RunError[],
  signal: AbortSignal,
): Promise<string[]> {
  const kept: string[] = [];
  for (const [i, text] of parts.entries()) {
    const block = await screen(s, plugins, 'pre', text, signal);
    if (!block) kept.push(text);
    else if (errors.length < MAX_ERRORS)
      errors.push({
        source,
        message: `partition ${i + 1} was not indexed: ${block.plugin_name} blocked it (${block.reason})`,
      });
  }
  return kept;
}

/** Removes what a pipeline indexed (its purge). */
export async function dropPipelineDocuments(s: RunsDeps, pipeline: DataPipelineDoc): Promise<void> {
  const index = planOf(pipeline).index;
  for (const d of await s.vectors.documents(index))
    if (d.origin === pipeline.object_id) await s.vectors.removeDocument(index, d.source);
  await forgetAnswersFrom(s, index);
}
