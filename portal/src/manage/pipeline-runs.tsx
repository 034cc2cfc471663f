// The runs of data pipelines, followed until they finish.
import { useEffect, useState } from 'preact/hooks';
import { type Resource, text } from '../resource';
import { type Context, ErrorText } from '../shell';
import { listResources, readResource } from './read-resources';
const RUN_FINISHED = new Set(['Completed', 'Failed']);

/**
 * The pipelines' runs, newest first. The list gives each run's name only: every run is read once, and
 * those not finished again every second until they are.
 */
export function PipelineRuns({ ctx, refresh }: { ctx: Context; refresh: number }) {
  const [runs, setRuns] = useState<Resource[]>([]);
  const [error, setError] = useState<unknown>();
  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    let live = true;
    const path = 'Svc.DataPipeline/dataPipelineRuns';
    const read = (name: string) => readResource(ctx.api, path, name);
    const show = async (known: Resource[]) => {
      const all = await Promise.all(
        known.map((r) => (RUN_FINISHED.has(text(r.status)) ? Promise.resolve(r) : read(r.name))),
      );
      if (!live) return;
      setRuns(all.sort((a, b) => text(b.started_on).localeCompare(text(a.started_on))));
      if (all.some((r) => !RUN_FINISHED.has(text(r.status))))
        timer = setTimeout(() => void show(all).catch(setError), 1000);
    };
    listResources(ctx.api, path).then(show).catch(setError);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [refresh]);
  return (
    <section aria-label="Pipeline runs">
      <h3>Runs</h3>
      <ErrorText error={error} />
      <table>
        <thead>
          <tr>
            <th>Run</th>
            <th>Pipeline</th>
            <th>Status</th>
            <th>Counts</th>
            <th>Errors</th>
          </tr>
        </thead>
        <tbody>
          {runs.map((r) => (
            <tr key={r.name}>
              <td>{r.name}</td>
              <td>{text(r.data_pipeline_object_id).split('/').pop()}</td>
              <td>{text(r.status)}</td>
              <td>{runCounts(r)}</td>
              <td class="muted">
                {Array.isArray(r.errors)
                  ? (r.errors as { source?: unknown; message?: unknown }[])
                      .map((e) => `${text(e.source)}: ${text(e.message)}`)
                      .join('; ')
                  : ''}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

/** A run's counts as table text: documents, partitions and failed documents. */
export const runCounts = (r: Resource): string => {
  const c = (r.counts ?? {}) as Record<string, unknown>;
  const count = (n: unknown) => text(n) || 0;
  return `${count(c.documents)} documents, ${count(c.partitions)} partitions, ${count(c.failed_documents)} failed`;
};
