// Data pipeline runs: the process action, and the queue worker that runs them. Runs are read
// through the generic resource routes (dataPipelineRuns: list and get).
import { z } from 'zod';
import { defineRoute, type Route } from '../shared/http/route.js';
import { json } from '../shared/http/types.js';
import { failPoisonedRun, runPipeline, startRun } from '../shared/knowledge/runs.js';
import { objectIdOf, partitionOf, ResourceName } from '../shared/providers/types/resource-type.js';
import { dataPipelines } from '../shared/providers/types/data-pipelines.js';
import { queueHandler, type QueueHandler } from '../shared/queues/handler.js';
import type { Timer } from '../shared/queues/timer.js';
import { startDueRuns } from '../shared/knowledge/schedule.js';
import { BlobEvent, handleBlobEvent, pollBlobEvents } from '../shared/knowledge/events.js';
import { RunMessage } from '../shared/queues/messages.js';

export const routes: Route[] = [
  defineRoute({
    api: 'management',
    tag: partitionOf(dataPipelines),
    auth: 'bearer',
    errors: 'management',
    name: 'dataPipelines-process',
    method: 'POST',
    path: '/instances/{instanceId}/providers/Svc.DataPipeline/dataPipelines/{name}/process',
    summary: 'Start a run of the pipeline: index what changed in its source since the last run',
    params: z.object({ instanceId: z.string(), name: ResourceName }),
    permission: ({ params }) => ({
      action: `${partitionOf(dataPipelines)}/write`,
      scope: objectIdOf(params.instanceId, dataPipelines, params.name),
    }),
    responses: {
      202: {
        description: "The run's object id; poll it with GET .../dataPipelineRuns/{runId}",
        schema: z.object({ object_id: z.string() }),
      },
      400: {
        description: 'The pipeline cannot run: its data source cannot be processed, or its embedding model is missing',
      },
      404: { description: 'No such pipeline' },
    },
    handler: async ({ services, principal, params }) => json(202, await startRun(services, principal, params.name)),
  }),
];

export const queueHandlers: QueueHandler[] = [
  queueHandler({ name: 'data-pipelines-run', queue: { of: 'pipelines' }, message: RunMessage, handler: runPipeline }),
  queueHandler({
    name: 'data-pipelines-poison',
    queue: { of: 'pipelines', poison: true },
    message: RunMessage,
    handler: failPoisonedRun,
  }),
  queueHandler({
    name: 'data-pipelines-events',
    queue: { of: 'pipelineEvents' },
    message: BlobEvent,
    handler: handleBlobEvent,
  }),
];

/**
 * Scheduled pipelines: a run for each due time, within 60 s of it (every 15 s standalone; each minute, at its start, in
 * Azure).
 */
export const timers: Timer[] = [
  {
    name: 'data-pipelines-schedule',
    schedule: '0 * * * * *',
    everyMs: 15_000,
    run: async (s) => {
      await startDueRuns(s);
    },
  },
  // Event Grid delivers Blob events in Azure; the standalone server looks for them every 10 s.
  {
    name: 'data-pipelines-blob-events',
    schedule: '0 * * * * *',
    everyMs: 10_000,
    standaloneOnly: true,
    run: async (s) => {
      await pollBlobEvents(s);
    },
  },
];
