// A resource's history: its versions newest first, the fields two of them differ in side by side, and
// Restore, which makes an earlier version current again as a new version.
import { useEffect, useState } from 'preact/hooks';
import { answer } from '../api';
import { type Resource, unwrap } from '../resource';
import { type Context, ErrorText, TableHead } from '../shell';
import { SERVICE_FIELDS } from './editor';
import type { SectionPath } from './types';

/** A version as the versions list gives it (the same for every resource type). */
type Version = Awaited<ReturnType<typeof versionsOf>>[number];

const versionsOf = (ctx: Context, path: SectionPath, name: string) =>
  answer(ctx.api.management.GET(`/providers/${path}/{name}/versions`, { params: { path: { name } } }));

const shown = (v: unknown) => (v === undefined ? '(not set)' : JSON.stringify(v, null, 2));

/** The fields whose values differ between two definitions, service fields aside, by name. */
export function changedFields(a: Resource, b: Resource): string[] {
  const fields = new Set([...Object.keys(a), ...Object.keys(b)].filter((f) => !SERVICE_FIELDS.includes(f)));
  return [...fields].filter((f) => JSON.stringify(a[f]) !== JSON.stringify(b[f])).sort();
}

export function History({
  ctx,
  path,
  name,
  onRestored,
}: {
  ctx: Context;
  path: SectionPath;
  name: string;
  onRestored: () => void;
}) {
  const [versions, setVersions] = useState<Version[]>([]);
  const [pair, setPair] = useState<[number, number]>();
  const [definitions, setDefinitions] = useState<[Resource, Resource]>();
  const [error, setError] = useState<unknown>();
  const load = () =>
    versionsOf(ctx, path, name).then((list) => {
      setVersions(list);
      const [newest, previous] = list;
      if (newest) setPair([previous?.version ?? newest.version, newest.version]);
    }, setError);
  useEffect(() => {
    void load();
  }, [path, name]);
  useEffect(() => {
    if (!pair) return;
    const read = (version: number) =>
      answer(
        ctx.api.management.GET(`/providers/${path}/{name}/versions/{version}`, { params: { path: { name, version } } }),
      ).then(unwrap);
    Promise.all([read(pair[0]), read(pair[1])]).then(([a, b]) => setDefinitions([a, b]), setError);
  }, [pair?.[0], pair?.[1]]);
  const restore = (v: number) => {
    if (!confirm(`Make version ${v} of ${name} current again? It becomes a new version; nothing is lost.`)) return;
    const restored = ctx.api.management.POST(`/providers/${path}/{name}/versions/{version}/restore`, {
      params: { path: { name, version: v } },
    });
    restored.then(() => {
      onRestored();
      return load();
    }, setError);
  };
  const current = versions[0]?.version;
  const pick = (side: 0 | 1, v: number) => setPair((p) => (p ? (side === 0 ? [v, p[1]] : [p[0], v]) : p));
  const changed = definitions ? changedFields(definitions[0], definitions[1]) : [];
  return (
    <section class="history" aria-label={`History of ${name}`}>
      <h3>History of {name}</h3>
      <ErrorText error={error} />
      <table>
        <TableHead columns={['Version', 'Saved', 'By', 'Compare']} actions />
        <tbody>
          {versions.map((v) => (
            <tr key={v.version}>
              <td>
                {v.version}
                {v.version === current ? ' (current)' : ''}
              </td>
              <td>{new Date(v.updated_on).toLocaleString()}</td>
              <td>{v.updated_by}</td>
              <td>
                <label class="check">
                  <input
                    type="radio"
                    name="history-a"
                    checked={pair?.[0] === v.version}
                    onChange={() => pick(0, v.version)}
                  />{' '}
                  A
                </label>{' '}
                <label class="check">
                  <input
                    type="radio"
                    name="history-b"
                    checked={pair?.[1] === v.version}
                    onChange={() => pick(1, v.version)}
                  />{' '}
                  B
                </label>
              </td>
              <td>
                {v.version !== current && (
                  <button class="link" aria-label={`Restore version ${v.version}`} onClick={() => restore(v.version)}>
                    Restore
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {pair && definitions && (
        <table class="diff" aria-label={`Differences between version ${pair[0]} and version ${pair[1]}`}>
          <thead>
            <tr>
              <th>Field</th>
              <th>Version {pair[0]}</th>
              <th>Version {pair[1]}</th>
            </tr>
          </thead>
          <tbody>
            {changed.length === 0 ? (
              <tr>
                <td colSpan={3} class="muted">
                  No differences
                </td>
              </tr>
            ) : (
              changed.map((f) => (
                <tr key={f}>
                  <th scope="row">{f}</th>
                  <td class="removed">
                    <pre>{shown(definitions[0][f])}</pre>
                  </td>
                  <td class="added">
                    <pre>{shown(definitions[1][f])}</pre>
                  </td>
                </tr>
              ))
            )}
          </tbody>
        </table>
      )}
    </section>
  );
}
