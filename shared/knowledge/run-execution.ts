// One delivery of a data pipeline run: checks what the run needs, lists the source's documents (all, those an
// event named, or for SharePoint those changed since the last run), then reads, extracts, partitions, shields,
// embeds and indexes each whose content changed, a few at a time, each within its own deadline and the run's,
// and removes those gone from the source. A document's failure is reported on the run; the others go on.
import { createHash } from 'node:crypto';
import { money } from '../models/pricing.js';
import { UpstreamError } from '../models/upstream-errors.js';
import {
  dataPipelines,
  dataSources,
  type DataPipelineDoc,
  type DataSourceDoc,
} from '../providers/types/data-pipelines.js';
import { screen } from '../shielding/plugins.js';
import { embedderFor, type Embedder } from './embedder.js';
import { ExtractionError, extractText, formatOf } from './extract.js';
import {
  emptyCounts,
  MAX_ERRORS,
  messageOf,
  RUNS_PK,
  RunFailure,
  runRecords,
  updateRun,
  type RunCounts,
  type RunDoc,
  type RunError,
  type RunsDeps,
  type RunUsage,
} from './run-records.js';
import { deletedSources, sharePointDocuments } from './sharepoint.js';
import {
  DocumentError,
  listDocuments,
  READABLE_SOURCE_TYPES,
  sourceProblem,
  sourceSettings,
  type SourceDocument,
} from './sources.js';
import { planOf } from './stages.js';
import { groupsOf, type IndexedEntry } from './vector-index.js';

/** Documents read, extracted and embedded at once within one run. */
const DOCUMENT_CONCURRENCY = 4;

/** What one delivery of a run did. */
export interface Executed {
  counts: RunCounts;
  usage: RunUsage;
  errors: RunError[];
  /** True when the run's deadline cut it short. */
  cut: boolean;
  index: string;
  delta?: RunDoc['delta'];
}

/** Checks what a run needs before it is queued: the pipeline, a source the service can read, the embedding model. */
export async function prerequisites(
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
  const { items } = await runRecords(s).query({
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

/** Indexes what changed in the run's source; throws RunFailure when the run cannot go on. */
export async function executeRun(s: RunsDeps, run: RunDoc, signal: AbortSignal | undefined): Promise<Executed> {
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
  const settings = [
    embedder.version,
    plan.sizeTokens,
    plan.overlapTokens,
    plan.partitioner,
    plan.shields.join(','),
  ].join('|');

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
      const listing = await sharePointDocuments(s, {
        graph: s.graph,
        settings: site,
        paths: pipeline.source_paths,
        cursors: last?.settings === settings ? last.links : undefined,
        signal: runDeadline,
      });
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
      await updateRun(s, run.id, (r) => ({ reading: [...(r.reading ?? []), doc.source] }));
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
      const { title, text } = await extractText(s.extraction, read.bytes, {
        format,
        fallbackTitle: doc.file_name,
        signal: docSignal,
      });
      // The tokenizer's tables are large: loaded by the first run, not at start-up.
      const { partitionMarkdown, partitionText } = await import('./partition.js');
      const cut = plan.partitioner === 'markdown' ? partitionMarkdown : partitionText;
      const all = cut(text, { sizeTokens: plan.sizeTokens, overlapTokens: plan.overlapTokens });
      if (all.length === 0) throw new ExtractionError('the document has no text');
      const parts =
        plan.shields.length > 0
          ? await shielded(s, all, { plugins: plan.shields, source: doc.source, errors, signal: docSignal })
          : all;
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
      if (recorded) await updateRun(s, run.id, (r) => ({ reading: (r.reading ?? []).filter((x) => x !== doc.source) }));
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
  parts: readonly string[],
  {
    plugins,
    source,
    errors,
    signal,
  }: { plugins: readonly string[]; source: string; errors: RunError[]; signal: AbortSignal },
): Promise<string[]> {
  const kept: string[] = [];
  for (const [i, text] of parts.entries()) {
    const block = await screen(s, { plugins, stage: 'pre', text, signal });
    if (!block) kept.push(text);
    else if (errors.length < MAX_ERRORS)
      errors.push({
        source,
        message: `partition ${i + 1} was not indexed: ${block.plugin_name} blocked it (${block.reason})`,
      });
  }
  return kept;
}
