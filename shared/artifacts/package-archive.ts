// The file format of an artifact package version: a ZIP of `manifest.json` and one JSON file per resource.
// Export writes it with a fixed time, so the same resources give the same bytes; reading checks it whole,
// refusing (400) anything a version may not hold.
import yazl from 'yazl';
import { z } from 'zod';
import { badRequest, DomainError } from '../errors.js';
import { parseJsonText } from '../http/json-body.js';
import { readArchive } from '../plugins/archive.js';
import { NamePart, SemanticVersion } from '../plugins/manifest.js';
import type { AnyResource } from '../providers/types/resource-type.js';

/** Most resources one version holds. */
export const MAX_RESOURCES = 500;

const ManifestEntry = z.object({ object_id: z.string().optional(), type: z.string().optional(), file: z.string() });
/**
 * What export writes; a package made by hand needs only `name` and `version` (or `package_version`): without
 * a `resources` list, every other `.json` file of the archive is one resource.
 */
const Manifest = z
  .object({
    type: z.literal('artifact-package').default('artifact-package'),
    name: NamePart,
    version: SemanticVersion.optional(),
    package_version: SemanticVersion.optional(),
    description: z.string().default(''),
    source_instance: z.string().optional(),
    exported_on: z.string().optional(),
    exported_by: z.string().optional(),
    resources: z.array(ManifestEntry).min(1).max(MAX_RESOURCES).optional(),
  })
  .refine((m) => (m.version ?? m.package_version) !== undefined, { path: ['version'], message: 'version is required' })
  .transform(({ package_version, ...m }) => ({ ...m, version: m.version ?? package_version ?? '' }));
export type Manifest = z.output<typeof Manifest>;
type Entry = z.output<typeof ManifestEntry>;

/** A resource's file as read: any JSON object with a string type and name. */
export type ResourceDefinition = Record<string, unknown> & { type: string; name: string };

const isDefinition = (value: unknown): value is ResourceDefinition =>
  typeof value === 'object' &&
  value !== null &&
  !Array.isArray(value) &&
  'type' in value &&
  typeof value.type === 'string' &&
  'name' in value &&
  typeof value.name === 'string';

/** A package version read back: its manifest and its resources, each as its file holds it. */
export interface Contents {
  manifest: Manifest;
  /** Each resource's file as listed (or found), with its definition. */
  resources: { entry: Entry; definition: ResourceDefinition }[];
}

/** Where a resource's file sits in the archive. */
export const fileOf = (doc: AnyResource) => `resources/${doc.pk.replace('/', '.')}/${doc.id}.json`;

/** The archive of these files, the same bytes for the same files. */
export function zip(entries: { name: string; data: string }[]): Promise<Buffer> {
  const z = new yazl.ZipFile();
  // A fixed time: the same resources give the same bytes.
  for (const e of entries) z.addBuffer(Buffer.from(e.data), e.name, { mtime: new Date(0) });
  z.end();
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    z.outputStream.on('data', (c: Buffer) => chunks.push(c));
    z.outputStream.on('end', () => resolve(Buffer.concat(chunks)));
    z.outputStream.on('error', reject);
  });
}

/** Reads and checks a package file whole: 400 for anything a version may not hold. */
export async function readContents(bytes: Buffer): Promise<Contents> {
  const archive = await readArchive(bytes, (n) => n.endsWith('.json'));
  const json = (name: string): unknown => {
    const data = archive.files.get(name);
    if (!data) throw badRequest(`Invalid package archive: ${name} is missing`);
    try {
      return parseJsonText(data.toString('utf8'), name);
    } catch (e) {
      throw badRequest(
        `Invalid package archive: ${e instanceof DomainError ? e.message : `${name} is not valid JSON`}`,
      );
    }
  };
  const manifest = Manifest.safeParse(json('manifest.json'));
  if (!manifest.success)
    throw badRequest(
      `Invalid manifest: ${manifest.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  const entries: Entry[] =
    manifest.data.resources ??
    [...archive.files.keys()]
      .filter((n) => n !== 'manifest.json' && !n.endsWith('/'))
      .sort()
      .map((file) => ({ file }));
  if (entries.length === 0) throw badRequest('Invalid package archive: it holds no resource');
  if (entries.length > MAX_RESOURCES) throw badRequest(`Invalid package archive: more than ${MAX_RESOURCES} resources`);
  const resources = entries.map((entry) => {
    const definition = json(entry.file);
    if (!isDefinition(definition))
      throw badRequest(`Invalid package archive: ${entry.file} is not a resource definition with a type and a name`);
    if (entry.type !== undefined && definition.type !== entry.type)
      throw badRequest(`Invalid package archive: ${entry.file} is not a ${entry.type}`);
    return { entry, definition };
  });
  return { manifest: manifest.data, resources };
}
