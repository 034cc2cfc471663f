// Running Python plugins: the plugin an object id names (its package's current version), checked for what
// it is used as, its package's files read once and kept by the package's digest, and a call in the sandbox.
import { validationError } from '../errors.js';
import type { SandboxFile, Sandbox, SandboxResult, SvcHost } from '../sandbox/sandbox.js';
import { readArchive, ARCHIVE_LIMITS } from './archive.js';
import type { Manifest } from './manifest.js';
import type { PackageDoc, PluginPackages } from './packages.js';

export type PluginManifest = Manifest['plugins'][number];

export interface RunnablePlugin {
  /** The full name, `Python-acctools-echo`. */
  name: string;
  /** The manifest's name, `echo`: what the model calls a tool plugin. */
  shortName: string;
  manifest: PluginManifest & { entry_point: string };
  pkg: PackageDoc;
  version: string;
  sha256: string;
}

/** Package files kept in memory, all packages together (a package's files never change for one digest). */
const KEPT_BYTES = 64 * 1024 * 1024;

export class PluginRuntime {
  private readonly kept = new Map<string, Promise<SandboxFile[]>>();
  private readonly sizes = new Map<string, number>();

  constructor(
    private readonly packages: PluginPackages,
    readonly sandbox: Sandbox,
    private readonly instanceId: string,
  ) {}

  /**
   * The Python plugin of `category` that `objectId` names, or a 400 on `field` that says why it cannot run:
   * unknown, a Dotnet plugin (catalogued only), another category, or without an entry point.
   */
  async runnable(
    objectId: string | undefined,
    category: 'agent tool' | 'agent workflow',
    field: string,
  ): Promise<RunnablePlugin> {
    const found = await this.lookup(objectId, category, field);
    if (!found)
      throw validationError([
        { field, message: `${String(objectId).split('/').pop() ?? ''} is not a plugin of this instance` },
      ]);
    return found;
  }

  /**
   * As `runnable`, but a plugin not (yet) installed is undefined rather than a 400: references are saved
   * in any order (a tool before its package is uploaded); one that exists and cannot run is a 400 at once.
   */
  async lookup(
    objectId: string | undefined,
    category: 'agent tool' | 'agent workflow',
    field: string,
  ): Promise<RunnablePlugin | undefined> {
    const fail = (message: string) => validationError([{ field, message }]);
    const prefix = `/instances/${this.instanceId}/providers/Svc.Platform/plugins/`;
    if (objectId === undefined) throw fail(`${field} is required`);
    if (!objectId.startsWith(prefix))
      throw fail(`${objectId} is not a plugin object id of this instance (${prefix}{plugin name})`);
    const name = objectId.slice(prefix.length);
    const found = (await this.packages.list()).flatMap((pkg) => {
      const version = pkg.versions.find((v) => v.package_version === pkg.current_version);
      return (version?.manifest.plugins ?? [])
        .filter((p) => `${pkg.package_runtime}-${pkg.package_name}-${p.name}`.toLowerCase() === name.toLowerCase())
        .map((p) => ({ pkg, plugin: p, version: pkg.current_version, sha256: version?.sha256 ?? '' }));
    })[0];
    if (!found) {
      if (name.toLowerCase().startsWith('dotnet-')) throw fail(dotnetOnly(name));
      return undefined;
    }
    const { pkg, plugin, version, sha256 } = found;
    const fullName = `${pkg.package_runtime}-${pkg.package_name}-${plugin.name}`;
    if (pkg.package_runtime !== 'Python') throw fail(dotnetOnly(fullName));
    if (plugin.category !== category)
      throw fail(`${fullName} is an ${plugin.category} plugin, not an ${category} plugin`);
    if (plugin.entry_point === undefined)
      throw fail(
        `${fullName} declares no entry_point (module:function) in its package's manifest.json, so it cannot run`,
      );
    return {
      name: fullName,
      shortName: plugin.name,
      manifest: { ...plugin, entry_point: plugin.entry_point },
      pkg,
      version,
      sha256,
    };
  }

  /** Calls the plugin in the sandbox with its argument; rejects with PluginFailed when the call fails. */
  async call(
    plugin: RunnablePlugin,
    argument: unknown,
    options: { svc?: SvcHost; signal?: AbortSignal; workFiles?: SandboxFile[] } = {},
  ): Promise<SandboxResult> {
    const packageFiles = await this.files(plugin);
    return this.sandbox.run({
      packageFiles,
      workFiles: options.workFiles ?? [],
      task: { entryPoint: plugin.manifest.entry_point, argument, ...(options.svc ? { svc: options.svc } : {}) },
      ...(options.signal ? { signal: options.signal } : {}),
    });
  }

  /** The package's files but its manifest, read from its archive once per digest. */
  private files(plugin: RunnablePlugin): Promise<SandboxFile[]> {
    const key = plugin.sha256;
    const kept = this.kept.get(key);
    if (kept) {
      this.kept.delete(key);
      this.kept.set(key, kept);
      return kept;
    }
    const reading = (async () => {
      const { bytes } = await this.packages.download(plugin.pkg.name, plugin.version);
      const contents = await readArchive(
        bytes,
        (n) => n !== 'manifest.json' && !n.endsWith('/'),
        ARCHIVE_LIMITS.entryBytes,
      );
      const files = [...contents.files].map(([name, b]) => ({ name, bytes: new Uint8Array(b) }));
      this.sizes.set(
        key,
        files.reduce((n, f) => n + f.bytes.length, 0),
      );
      this.trim();
      return files;
    })();
    this.kept.set(key, reading);
    reading.catch(() => this.kept.delete(key));
    return reading;
  }

  private trim(): void {
    let total = [...this.sizes.values()].reduce((a, b) => a + b, 0);
    for (const key of this.kept.keys()) {
      if (total <= KEPT_BYTES) return;
      total -= this.sizes.get(key) ?? 0;
      this.kept.delete(key);
      this.sizes.delete(key);
    }
  }
}

const dotnetOnly = (name: string) =>
  `${name} is a Dotnet plugin: Dotnet packages are catalogued only, as this service has no .NET runtime; ` +
  `agent tools and workflows run as Python plugins`;
