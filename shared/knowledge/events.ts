// Event-triggered data pipelines: a pipeline with `trigger_type` `Event` has a run started for the documents a
// Blob created or deleted event names, when the blob is in one of its source's containers (and under its
// paths). In Azure, Event Grid delivers the storage account's Blob events to the pipeline-events queue (both
// infra flavours subscribe the service's storage account); each queue message is one event in the Event Grid
// schema. The standalone server has no Event Grid: the stand-in below lists the containers of Event
// pipelines every 10 s and writes the same events to the same queue for blobs that appeared, changed or
// went, so the same handler starts the same runs. A run's name derives from the event and the pipeline: an
// event delivered twice starts one run.
import type { RunsDeps } from './run-records.js';
import { z } from 'zod';
import { partitionOf, resourcesOf } from '../providers/types/resource-type.js';
import { type DataPipelineDoc, dataPipelines, dataSources } from '../providers/types/data-pipelines.js';
import type { QueueDelivery } from '../queues/producer.js';
import { ConflictError } from '../store/types.js';
import { derivedRunName } from './schedule.js';
import { queueRun } from './runs.js';
import { blobServiceOf, directoryPrefix, sourceSettings, type SourceSettings } from './sources.js';

/** What this module uses of the service (the hosts pass the whole of it). */
export type KnowledgeEventsDeps = RunsDeps;

export const BLOB_CREATED = 'Microsoft.Storage.BlobCreated';
export const BLOB_DELETED = 'Microsoft.Storage.BlobDeleted';
/** Who started an event-triggered run, as the run records it. */
export const EVENTS = 'blob-events';

/** The fields of an Event Grid Blob event the service reads. */
export const BlobEvent = z.object({
  id: z.string().min(1).max(200),
  eventType: z.string().max(200),
  data: z.object({ url: z.string().max(4096) }),
});
export type BlobEvent = z.output<typeof BlobEvent>;

/** A pipeline's Event source: the Blob endpoint its documents are under, and how a blob URL names a document. */
interface Watched {
  pipeline: DataPipelineDoc;
  source: SourceSettings;
  /** The container URL prefixes (`{service}/{container}/`), with the prefix a document's source takes there. */
  containers: { url: string; name: string; sourcePrefix: string }[];
  prefixes: string[];
}

async function watchedPipelines(s: KnowledgeEventsDeps): Promise<Watched[]> {
  const { items } = await resourcesOf(s.store, dataPipelines).query({
    partition: partitionOf(dataPipelines),
    where: [
      { field: 'deleted', op: 'ne', value: true },
      { field: 'trigger_type', op: 'eq', value: 'Event' },
    ],
  });
  const watched: Watched[] = [];
  for (const pipeline of items) {
    const doc = await s.resourceCache.get(pipeline.data_source_object_id, dataSources);
    // Only storage sources have Blob events (the pipeline's rules refuse Event on the others).
    if (doc?.data_source_type !== 'AzureBlob' && doc?.data_source_type !== 'AzureDataLake') continue;
    const source = sourceSettings(doc);
    let service;
    try {
      service = await blobServiceOf(s, source);
    } catch {
      continue;
    }
    const base = service.url.replace(/\/+$/, '');
    const named = source.containers.length > 1;
    const containers = source.containers.map((c) => ({
      url: `${base}/${c}/`,
      name: c,
      sourcePrefix: named ? `${c}/` : '',
    }));
    const prefixes =
      pipeline.source_paths.length > 0
        ? pipeline.source_paths
        : (source.paths ?? []).map(directoryPrefix).filter((p) => p !== '');
    watched.push({ pipeline, source, containers, prefixes });
  }
  return watched;
}

/** The document a blob URL is to the watched pipeline (its source name), or undefined when not its. */
function documentOf(w: Watched, blobUrl: string): string | undefined {
  for (const c of w.containers) {
    if (!blobUrl.startsWith(c.url)) continue;
    let name: string;
    try {
      name = blobUrl.slice(c.url.length).split('/').map(decodeURIComponent).join('/');
    } catch {
      return undefined;
    }
    if (name === '' || (w.prefixes.length > 0 && !w.prefixes.some((p) => name.startsWith(p)))) return undefined;
    return `${c.sourcePrefix}${name}`;
  }
  return undefined;
}

/**
 * The pipeline-events queue's handler: a run, for the document the event names, of each Event pipeline it belongs to.
 */
export async function handleBlobEvent(
  event: BlobEvent,
  _delivery: QueueDelivery,
  s: KnowledgeEventsDeps,
): Promise<void> {
  if (event.eventType !== BLOB_CREATED && event.eventType !== BLOB_DELETED) return;
  for (const w of await watchedPipelines(s)) {
    const document = documentOf(w, event.data.url);
    if (!document) continue;
    try {
      await queueRun(s, w.pipeline, {
        name: derivedRunName(w.pipeline.object_id, `event:${event.id}`),
        by: EVENTS,
        documents: [document],
      });
    } catch (e) {
      // The same event delivered again.
      if (!(e instanceof ConflictError)) throw e;
    }
  }
}

/** What the stand-in saw of each watched container at its last look (blob name to ETag), per service. */
const looks = new WeakMap<KnowledgeEventsDeps, Map<string, Map<string, string>>>();

/**
 * The standalone server's stand-in for Event Grid: lists the containers of Event pipelines and writes a Blob
 * event to the pipeline-events queue for each blob that appeared or changed since the last look, and for each
 * that went. At its first look it compares with what the pipeline has indexed. Answers how many events it wrote.
 */
export async function pollBlobEvents(s: KnowledgeEventsDeps): Promise<number> {
  let written = 0;
  const seen = looks.get(s) ?? new Map<string, Map<string, string>>();
  looks.set(s, seen);
  for (const w of await watchedPipelines(s)) {
    const service = await blobServiceOf(s, w.source);
    const indexed = new Set(
      (await s.vectors.documents(w.pipeline.index_name))
        .filter((d) => d.origin === w.pipeline.object_id)
        .map((d) => d.source),
    );
    for (const c of w.containers) {
      const key = `${w.pipeline.object_id}|${c.url}`;
      const before = seen.get(key);
      const now = new Map<string, string>();
      try {
        for (const prefix of w.prefixes.length > 0 ? w.prefixes : ['']) {
          for await (const blob of service.getContainerClient(c.name).listBlobsFlat({ prefix }))
            now.set(blob.name, blob.properties.etag);
        }
      } catch {
        // An unreadable container is reported by the runs of the pipeline, not here.
        continue;
      }
      const event = async (type: string, name: string, tag: string) => {
        const url = `${c.url}${name.split('/').map(encodeURIComponent).join('/')}`;
        await s.producer.send(s.config.knowledge.eventsQueue, {
          id: `standalone:${type}:${url}:${tag}`,
          eventType: type,
          subject: `/blobServices/default/containers/${c.name}/blobs/${name}`,
          data: { url },
        });
        written++;
      };
      for (const [name, etag] of now) {
        const changed = before ? before.get(name) !== etag : !indexed.has(`${c.sourcePrefix}${name}`);
        if (changed) await event(BLOB_CREATED, name, etag);
      }
      const gone = before
        ? [...before.keys()]
        : [...indexed].filter((d) => d.startsWith(c.sourcePrefix)).map((d) => d.slice(c.sourcePrefix.length));
      for (const name of gone) if (!now.has(name)) await event(BLOB_DELETED, name, String(Date.now()));
      seen.set(key, now);
    }
  }
  return written;
}
