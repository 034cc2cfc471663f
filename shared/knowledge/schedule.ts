// Scheduled data pipelines: a pipeline with `trigger_type` `Schedule` has a run started for each due time of its
// `trigger_cron` (five fields, UTC). Every instance that runs the queue workers looks for due pipelines (the
// standalone server every 15 s, a timer trigger each minute in Azure); a run's id is derived from its pipeline
// and due time, so however many instances see the same due time, creating the run succeeds once and only
// that instance queues it.
import type { RunsDeps } from './run-records.js';
import { createHash } from 'node:crypto';
import { ConflictError } from '../store/types.js';
import { partitionOf, resourcesOf } from '../providers/types/resource-type.js';
import { dataPipelines } from '../providers/types/data-pipelines.js';
import { cronProblem, lastDue } from './cron.js';
import { queueRun } from './runs.js';

/** What this module uses of the service (the hosts pass the whole of it). */
export type ScheduleDeps = RunsDeps;

/** A due time missed for longer than this (every instance stopped) is skipped, not caught up. */
const CATCH_UP_MS = 10 * 60_000;
/** Who started a scheduled run, as the run records it. */
export const SCHEDULER = 'scheduler';

/**
 * A run name for a pipeline and what started it (a due time, an event): a UUID derived from both, the same on every
 * instance.
 */
export function derivedRunName(pipelineObjectId: string, cause: string): string {
  const h = createHash('sha256').update(`${pipelineObjectId.toLowerCase()}|${cause}`).digest('hex');
  // Laid out as a UUID (version 8: custom), like the names of runs started by hand.
  const variant = ((parseInt(h.slice(16, 17), 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/**
 * Starts a run for every scheduled pipeline whose latest due time has no run yet; answers how many this call started.
 */
/** A run name for a pipeline's due time. */
export const scheduledRunName = (pipelineObjectId: string, due: Date) =>
  derivedRunName(pipelineObjectId, due.toISOString());

export async function startDueRuns(s: ScheduleDeps, now = new Date()): Promise<number> {
  const { items } = await resourcesOf(s.store, dataPipelines).query({
    partition: partitionOf(dataPipelines),
    where: [
      { field: 'deleted', op: 'ne', value: true },
      { field: 'trigger_type', op: 'eq', value: 'Schedule' },
    ],
  });
  let started = 0;
  for (const pipeline of items) {
    if (!pipeline.trigger_cron || cronProblem(pipeline.trigger_cron)) continue;
    const due = lastDue(pipeline.trigger_cron, now);
    if (now.getTime() - due.getTime() > CATCH_UP_MS) continue;
    // A pipeline saved after its due time starts at its next one.
    if (Date.parse(pipeline.created_on) > due.getTime()) continue;
    try {
      await queueRun(s, pipeline, { name: scheduledRunName(pipeline.object_id, due), by: SCHEDULER });
      started++;
    } catch (e) {
      // Another instance started it.
      if (!(e instanceof ConflictError))
        s.log.warn('A scheduled run could not be started', {
          pipeline: pipeline.name,
          error: e instanceof Error ? e.message : String(e),
        });
    }
  }
  return started;
}
