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
  for (const e of entries) z.addBuffer(Buffer.isBuffer(e.data) ? e.data : Buffer.from(e.data), e.name, { ...(e.mode ? { mode: e.mode } : {}), compress: e.compress ?? true });
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

export const manifest = (name: string, version: string, runtime: 'Python' | 'Dotnet', plugins: Record<string, unknown>[]) => JSON.stringify({ name, version, runtime, display_name: `${name} tools`, description: 'Test package', plugins });
export const echo = { name: 'echo', display_name: 'Echo', description: 'Echoes', category: 'agent tool', parameters: [{ name: 'text', type: 'string', description: 'What to echo' }] };
export const planner = {
  name: 'planner',
  display_name: 'Planner',
  description: 'Plans',
  category: 'agent workflow',
  parameters: [
    { name: 'main_model', type: 'resource-object-id', description: 'Model' },
    { name: 'steps', type: 'int', description: 'Steps', default_value: 3 },
  ],
  parameter_selection_hints: { main_model: { resourcePath: 'Svc.AIModel/aiModels', filterActionPayload: { Category: 'LLM' } } },
  dependencies: [{ selection_type: 'Single', dependency_plugin_names: ['Python-acctools-echo'] }],
};

export const python = (version: string, plugins: Record<string, unknown>[] = [echo, planner], name = 'acctools') =>
  zip([
    { name: 'manifest.json', data: manifest(name, version, 'Python', plugins) },
    { name: 'acctools/__init__.py', data: `VERSION = "${version}"\n` },
  ]);

