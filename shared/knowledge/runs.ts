// Data pipeline runs: `process` records a Pending run and queues it; the queue worker runs it (run-execution.ts)
// and records its counts and per-document errors. A run is safe to deliver more than once: documents already
// indexed with the same content hash are skipped, and replacing a document's partitions is atomic per
// document, so a run cut short and delivered again finishes with no duplicates. Runs of one data source hold
// only their share of the workers.
import { randomUUID } from 'node:crypto';
import type { Principal } from '../auth/principal.js';
import { badRequest, notFound } from '../errors.js';
import { objectIdOf, resourceId } from '../providers/types/resource-type.js';
import { type DataPipelineDoc, dataPipelineRuns, dataPipelines } from '../providers/types/data-pipelines.js';
import { MAX_DEQUEUE_COUNT, type QueueDelivery } from '../queues/producer.js';
import { Shares } from '../queues/shares.js';
import type { RunMessage } from '../queues/messages.js';
import { forgetAnswersFrom } from './cache.js';
import { executeRun, prerequisites } from './run-execution.js';
import {
  emptyCounts,
  ended,
  messageOf,
  RUNS_PK,
  RunFailure,
  runRecords,
  updateRun,
  type RunDoc,
  type RunsDeps,
} from './run-records.js';
import { planOf } from './stages.js';

/** `POST .../dataPipelines/{name}/process` (the caller may write the pipeline): records a Pending run and queues it. */
export async function startRun(
  s: RunsDeps,
  principal: Principal,
  pipelineName: string,
): Promise<{ object_id: string }> {
  const pipelineId = objectIdOf(s.config.instanceId, dataPipelines, pipelineName);
  const pipeline = await s.resourceCache.get(pipelineId, dataPipelines);
  if (!pipeline) throw notFound(`data-pipeline ${pipelineName} not found`);
  return queueRun(s, pipeline, { name: randomUUID(), by: principal.upn, refuse: true });
}

/**
 * Records a run of the pipeline named `name` and queues it. A run that cannot start (its source or model
 * unusable) is a 400 when `refuse` (someone asked for it), else recorded Failed with the reason (a scheduled
 * due time). Throws ConflictError when a run of that name exists (a due time another instance started).
 */
export async function queueRun(
  s: RunsDeps,
  pipeline: DataPipelineDoc,
  { name, by, ...options }: { name: string; by: string; refuse?: boolean; documents?: string[] },
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
  await runRecords(s).create(run);
  if (!problem) await s.producer.send(s.config.knowledge.queue, { run: run.id } satisfies RunMessage);
  return { object_id: run.object_id };
}

/** The queue worker of runs. Throws to have the message delivered again (transient failures, shutdown). */
export async function runPipeline(message: RunMessage, delivery: QueueDelivery, s: RunsDeps): Promise<void> {
  const id = message.run;
  // Runs of one data source hold only their share of the workers; past it the run waits in the queue, Pending.
  const pending = await runRecords(s).read(RUNS_PK, id);
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
  const run = await updateRun(s, id, (r) =>
    ended(r) ? undefined : { status: 'InProgress', started_on: r.started_on ?? new Date().toISOString() },
  );
  if (!run || ended(run)) return;
  try {
    const { counts, errors, cut, index, delta, usage } = await executeRun(s, run, delivery.signal);
    // Cached answers may quote what changed: the agents searching the index answer afresh.
    if (counts.added + counts.updated + counts.removed > 0) await forgetAnswersFrom(s, index);
    await updateRun(s, id, () => ({
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
      await updateRun(s, id, () => ({ reading: undefined })).catch(() => undefined);
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
  await updateRun(s, id, (r) =>
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

/** Removes what a pipeline indexed (its purge). */
export async function dropPipelineDocuments(s: RunsDeps, pipeline: DataPipelineDoc): Promise<void> {
  const index = planOf(pipeline).index;
  for (const d of await s.vectors.documents(index))
    if (d.origin === pipeline.object_id) await s.vectors.removeDocument(index, d.source);
  await forgetAnswersFrom(s, index);
}
