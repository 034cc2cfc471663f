// Plugin packages: upload by version, the version history, downloads.
import { useEffect, useState } from 'preact/hooks';
import { type Resource, text, unwrap } from '../resource';
import { type Context, ErrorText, TableHead, FilePicker, saveAs } from '../shell';
export const PACKAGES = '/providers/Svc.Platform/pluginPackages';
/** Every call of the plugin APIs names their version. */
export const API_VERSION = 'api-version=2024-02-16';

export interface PackageVersion {
  package_version: string;
  file_name: string;
  size: number;
  sha256: string;
  source: string;
  uploaded_on: string;
  uploaded_by: string;
}

/** A package's versions, newest first, each downloadable as uploaded, and the plugins of the current one. */
export function PackageVersions({ ctx, name }: { ctx: Context; name: string }) {
  const path = `${PACKAGES}/${encodeURIComponent(name)}`;
  const [pkg, setPkg] = useState<{ current_version: string; versions: PackageVersion[]; plugins: string[] }>();
  const [error, setError] = useState<unknown>();
  useEffect(() => void ctx.api.json<Resource | { resource: Resource }>('management', `${path}?${API_VERSION}`).then((r) => setPkg(unwrap(r) as unknown as typeof pkg), setError), [name]);
  const download = (v: PackageVersion) =>
    ctx.api
      .call('management', `${path}?${API_VERSION}&loadContent=true&version=${encodeURIComponent(v.package_version)}`)
      .then((r) => saveAs(r, v.file_name))
      .catch(setError);
  return (
    <section aria-label={`Versions of ${name}`}>
      <h3>{name}</h3>
      <ErrorText error={error} />
      {pkg && (
        <>
          <table>
            <thead>
              <tr>
                <th>Version</th>
                <th>Uploaded</th>
                <th>By</th>
                <th>Source</th>
                <th>Size</th>
                <th>SHA-256</th>
                <th>
                  <span class="visually-hidden">Download</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {[...pkg.versions].reverse().map((v) => (
                <tr key={v.package_version}>
                  <td>
                    {v.package_version}
                    {v.package_version === pkg.current_version ? ' (current)' : ''}
                  </td>
                  <td>{new Date(v.uploaded_on).toLocaleString()}</td>
                  <td>{v.uploaded_by}</td>
                  <td>{v.source}</td>
                  <td>{(v.size / 1024).toFixed(1)} KB</td>
                  <td class="muted">
                    <code title={v.sha256}>{v.sha256.slice(0, 12)}</code>
                  </td>
                  <td>
                    <button class="link" aria-label={`Download ${name} ${v.package_version}`} onClick={() => void download(v)}>
                      Download
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <p>Plugins of the current version: {pkg.plugins.join(', ') || 'none'}</p>
        </>
      )}
    </section>
  );
}

export function Packages({ ctx }: { ctx: Context }) {
  const [items, setItems] = useState<Resource[]>([]);
  const [selected, setSelected] = useState<string>();
  const [shown, setShown] = useState(0);
  const [error, setError] = useState<unknown>();
  const [form, setForm] = useState({ name: '', runtime: 'Python', version: '1.0.0' });
  const load = () => ctx.api.all<Resource | { resource: Resource }>('management', `${PACKAGES}?${API_VERSION}`).then((l) => setItems(l.map(unwrap)), setError);
  useEffect(() => void load(), []);
  const upload = async (file: File) => {
    setError(undefined);
    const body = new FormData();
    body.set('file', file);
    body.set('resource', JSON.stringify({ type: 'plugin-package', name: form.name, package_runtime: form.runtime, package_version: form.version, package_store_type: 'Private' }));
    const name = `${form.runtime}-${form.name}`;
    await ctx.api.call('management', `${PACKAGES}/${encodeURIComponent(name)}?${API_VERSION}`, { method: 'POST', body });
    await load();
    setSelected(name);
    setShown((n) => n + 1);
  };
  return (
    <section aria-label="Plugin packages">
      <h2>Plugin packages</h2>
      <table>
        <TableHead columns={['Package', 'Runtime', 'Current version', 'Versions']} actions />
        <tbody>
          {items.map((p) => (
            <tr key={p.name}>
              <td>{p.name}</td>
              <td>{text(p.package_runtime)}</td>
              <td>{text(p.current_version)}</td>
              <td>{Array.isArray(p.versions) ? p.versions.length : ''}</td>
              <td>
                <button class="link" aria-label={`Versions of ${p.name}`} onClick={() => setSelected(p.name)}>
                  Versions
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <form class="row" onSubmit={(e) => e.preventDefault()}>
        <label for="pkg-name">Name</label>
        <input id="pkg-name" value={form.name} onInput={(e) => setForm({ ...form, name: e.currentTarget.value })} />
        <label for="pkg-runtime">Runtime</label>
        <select id="pkg-runtime" value={form.runtime} onChange={(e) => setForm({ ...form, runtime: e.currentTarget.value })}>
          <option>Python</option>
          <option>Dotnet</option>
        </select>
        <label for="pkg-version">Version</label>
        <input id="pkg-version" value={form.version} onInput={(e) => setForm({ ...form, version: e.currentTarget.value })} />
        <FilePicker id="pkg-file" label="Upload package file…" onFile={(file) => void upload(file).catch(setError)} />
      </form>
      <ErrorText error={error} />
      {selected && <PackageVersions key={`${selected}-${shown}`} ctx={ctx} name={selected} />}
    </section>
  );
}
