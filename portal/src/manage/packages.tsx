// Plugin packages: upload by version, the version history, downloads.
import { useEffect, useState } from 'preact/hooks';
import { answer, API_VERSION, download } from '../api';
import type { components } from '../api-types/management';
import { formData } from '../multipart';
import type { Definition, PluginPackage, PluginPackageVersion } from '../schemas';
import { type Context, ErrorText, TableHead, FilePicker, saveAs } from '../shell';

const PACKAGE = '/providers/Svc.Platform/pluginPackages/{packageName}';
/** Every call of the plugin APIs names their version. */
const VERSIONED: { 'api-version': typeof API_VERSION } = { 'api-version': API_VERSION };

/** A package's resource as an upload sends it (JSON text beside the file). */
type PackageResource = Definition<'plugin-packages-upsert'>;
const RUNTIMES: readonly PackageResource['package_runtime'][] = ['Python', 'Dotnet'];

/** A package's versions, newest first, each downloadable as uploaded, and the plugins of the current one. */
export function PackageVersions({ ctx, name }: { ctx: Context; name: string }) {
  const [pkg, setPkg] = useState<PluginPackage>();
  const [error, setError] = useState<unknown>();
  const path = { packageName: name };
  useEffect(
    () =>
      void answer(ctx.api.management.GET(PACKAGE, { params: { path, query: VERSIONED } })).then(
        (r) => setPkg(r.resource),
        setError,
      ),
    [name],
  );
  const save = (v: PluginPackageVersion) => {
    const file = ctx.api.management.GET(PACKAGE, {
      params: { path, query: { ...VERSIONED, loadContent: 'true', version: v.package_version } },
      parseAs: 'blob',
    });
    return download(file)
      .then((file) => saveAs(file, v.file_name))
      .catch(setError);
  };
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
                    <button
                      class="link"
                      aria-label={`Download ${name} ${v.package_version}`}
                      onClick={() => void save(v)}
                    >
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
  const [items, setItems] = useState<components['schemas']['PluginPackageSummary'][]>([]);
  const [selected, setSelected] = useState<string>();
  const [shown, setShown] = useState(0);
  const [error, setError] = useState<unknown>();
  const [form, setForm] = useState<{ name: string; runtime: PackageResource['package_runtime']; version: string }>({
    name: '',
    runtime: 'Python',
    version: '1.0.0',
  });
  // One list, not paged.
  const load = () =>
    answer(ctx.api.management.GET('/providers/Svc.Platform/pluginPackages', { params: { query: VERSIONED } })).then(
      (l) => setItems(l.map((p) => p.resource)),
      setError,
    );
  useEffect(() => void load(), []);
  const upload = async (file: File) => {
    setError(undefined);
    const resource: PackageResource = {
      type: 'plugin-package',
      name: form.name,
      package_runtime: form.runtime,
      package_version: form.version,
      package_store_type: 'Private',
    };
    const name = `${form.runtime}-${form.name}`;
    await ctx.api.management.POST(PACKAGE, {
      params: { path: { packageName: name }, query: VERSIONED },
      body: { file, resource: JSON.stringify(resource) },
      bodySerializer: formData,
    });
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
              <td>{p.package_runtime}</td>
              <td>{p.current_version}</td>
              <td>{p.versions.length}</td>
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
        <select
          id="pkg-runtime"
          value={form.runtime}
          onChange={(e) =>
            setForm({ ...form, runtime: RUNTIMES.find((r) => r === e.currentTarget.value) ?? form.runtime })
          }
        >
          {RUNTIMES.map((r) => (
            <option key={r}>{r}</option>
          ))}
        </select>
        <label for="pkg-version">Version</label>
        <input
          id="pkg-version"
          value={form.version}
          onInput={(e) => setForm({ ...form, version: e.currentTarget.value })}
        />
        <FilePicker id="pkg-file" label="Upload package file…" onFile={(file) => void upload(file).catch(setError)} />
      </form>
      <ErrorText error={error} />
      {selected && <PackageVersions key={`${selected}-${shown}`} ctx={ctx} name={selected} />}
    </section>
  );
}
