// Plugin packages built in memory, as a vendor would build them: ZIP (and NuGet) archives with a manifest.
import yazl from 'yazl';

export interface Entry {
  name: string;
  data: Buffer | string;
  mode?: number;
  compress?: boolean;
}

export function zip(entries: Entry[]): Promise<Buffer> {
  const z = new yazl.ZipFile();
  for (const e of entries)
    z.addBuffer(Buffer.isBuffer(e.data) ? e.data : Buffer.from(e.data), e.name, {
      ...(e.mode ? { mode: e.mode } : {}),
      compress: e.compress ?? true,
    });
  z.end();
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    z.outputStream.on('data', (c: Buffer) => chunks.push(c));
    z.outputStream.on('end', () => resolve(Buffer.concat(chunks)));
  });
}

/** Renames an entry in place (local header and central directory): names yazl refuses to write. */
export const rename = (archive: Buffer, from: string, to: string) => {
  if (from.length !== to.length) throw new Error('same length only');
  return Buffer.from(archive.toString('latin1').split(from).join(to), 'latin1');
};

export const manifest = (
  name: string,
  version: string,
  runtime: 'Python' | 'Dotnet',
  plugins: Record<string, unknown>[],
) => JSON.stringify({ name, version, runtime, display_name: `${name} tools`, description: 'Test package', plugins });
export const echo = {
  name: 'echo',
  display_name: 'Echo',
  description: 'Echoes',
  category: 'agent tool',
  parameters: [{ name: 'text', type: 'string', description: 'What to echo' }],
};
export const planner = {
  name: 'planner',
  display_name: 'Planner',
  description: 'Plans',
  category: 'agent workflow',
  parameters: [
    { name: 'main_model', type: 'resource-object-id', description: 'Model' },
    { name: 'steps', type: 'int', description: 'Steps', default_value: 3 },
  ],
  parameter_selection_hints: {
    main_model: { resourcePath: 'Svc.AIModel/aiModels', filterActionPayload: { Category: 'LLM' } },
  },
  dependencies: [{ selection_type: 'Single', dependency_plugin_names: ['Python-acctools-echo'] }],
};

export const python = (version: string, plugins: Record<string, unknown>[] = [echo, planner], name = 'acctools') =>
  zip([
    { name: 'manifest.json', data: manifest(name, version, 'Python', plugins) },
    { name: 'acctools/__init__.py', data: `VERSION = "${version}"\n` },
  ]);

/** A Python package whose plugins run: `modules` are its files (path -> source), `plugins` its manifest entries. */
export const runnable = (
  name: string,
  version: string,
  plugins: Record<string, unknown>[],
  modules: Record<string, string>,
) =>
  zip([
    { name: 'manifest.json', data: manifest(name, version, 'Python', plugins) },
    ...Object.entries(modules).map(([path, data]) => ({ name: path, data })),
  ]);

/** Uploads a package archive through the Management API, as the portal and the CLI do. */
export async function uploadPackage(
  app: { management: string; token: (upn?: string) => Promise<string> },
  instance: string,
  pkg: string,
  bytes: Buffer,
  resource: Record<string, unknown>,
  as?: string,
) {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(bytes)]), `${pkg}.zip`);
  form.append('resource', JSON.stringify(resource));
  const res = await fetch(
    `${app.management}/instances/${instance}/providers/Svc.Platform/pluginPackages/${pkg}?api-version=2024-02-16`,
    { method: 'POST', body: form, headers: { authorization: `Bearer ${await app.token(as)}` } },
  );
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}
