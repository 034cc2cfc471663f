// The plugin package manifest: package name, version, runtime and the
// plugins it contains, with the naming, category, parameter and dependency rules.
// The one function used, from its own module: semver's entry loads all of it at every cold start.
import validVersion from 'semver/functions/valid.js';
import { z } from 'zod';
import { PARAMETER_TYPES } from '../providers/types/parameter-types.js';

export const RUNTIMES = ['Python', 'Dotnet'] as const;
export type Runtime = (typeof RUNTIMES)[number];

/** Plugin categories allowed per runtime, spelled as the plugin manifest spells them. */
export const CATEGORIES: Record<Runtime, readonly string[]> = {
  Python: ['agent workflow', 'agent tool'],
  Dotnet: ['Data Source', 'Data Pipeline Stage', 'Content Text Extraction', 'Content Text Partitioning', 'Shielding'],
};

/** One part of a package or plugin name: letters, digits, underscores or hyphens. */
export const NamePart = z.string().regex(/^[A-Za-z0-9_-]{1,100}$/, 'must be letters, digits, underscores or hyphens');

/** A package version: a semantic version (`1.2.0`, `2.0.0-beta.1`), which also keeps `.` and `..` out of blob paths. */
export const SemanticVersion = z
  .string()
  .max(64)
  .refine((v) => validVersion(v) === v, 'must be a semantic version such as 1.0.0');

export const packageName = (runtime: Runtime, name: string) => `${runtime}-${name}`;
export const pluginName = (runtime: Runtime, pkg: string, plugin: string) => `${runtime}-${pkg}-${plugin}`;

const Parameter = z
  .object({
    name: z.string().min(1),
    type: z.enum(PARAMETER_TYPES),
    description: z.string().default(''),
    default_value: z.unknown().optional(),
  })
  .strict();

const SelectionHint = z
  .object({ resourcePath: z.string().min(1), filterActionPayload: z.record(z.string(), z.string()).default({}) })
  .strict();

const Dependency = z
  .object({
    selection_type: z.enum(['Single', 'Multiple']),
    dependency_plugin_names: z.array(z.string().min(1)).min(1),
  })
  .strict();

/** `module:function`: a module file of the package (`tools/echo.py` for `tools.echo`) and a function in it. */
export const EntryPoint = z
  .string()
  .regex(
    /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$/,
    'must be module:function, such as tools.echo:run',
  );

/** The files that may hold an entry point's module, relative to the package's root. */
export const moduleFiles = (entryPoint: string) => {
  const path = (entryPoint.split(':')[0] ?? '').replaceAll('.', '/');
  return [`${path}.py`, `${path}/__init__.py`];
};

const PluginManifest = z
  .object({
    name: NamePart,
    entry_point: EntryPoint.optional().describe('Python plugins: the function the sandbox calls'),
    display_name: z.string().default(''),
    description: z.string().default(''),
    category: z.string(),
    parameters: z.array(Parameter).default([]),
    /** Keyed by a parameter of type resource-object-id. */
    parameter_selection_hints: z.record(z.string(), SelectionHint).default({}),
    dependencies: z.array(Dependency).default([]),
  })
  .strict();

export const Manifest = z
  .object({
    /** The package name without the runtime prefix (`acctools` for `Python-acctools`). */
    name: NamePart,
    version: SemanticVersion,
    runtime: z.enum(RUNTIMES),
    display_name: z.string().default(''),
    description: z.string().default(''),
    plugins: z.array(PluginManifest).min(1, 'a package declares at least one plugin'),
  })
  .strict()
  .superRefine((m, ctx) => {
    const seen = new Set<string>();
    m.plugins.forEach((p, i) => {
      if (seen.has(p.name))
        ctx.addIssue({ code: 'custom', path: ['plugins', i, 'name'], message: `duplicate plugin name ${p.name}` });
      seen.add(p.name);
      if (!CATEGORIES[m.runtime].includes(p.category)) {
        ctx.addIssue({
          code: 'custom',
          path: ['plugins', i, 'category'],
          message: `${p.category} is not a ${m.runtime} category (${CATEGORIES[m.runtime].join(', ')})`,
        });
      }
      for (const key of Object.keys(p.parameter_selection_hints)) {
        if (p.parameters.find((x) => x.name === key)?.type !== 'resource-object-id') {
          ctx.addIssue({
            code: 'custom',
            path: ['plugins', i, 'parameter_selection_hints', key],
            message: 'hints apply to resource-object-id parameters only',
          });
        }
      }
    });
  });
export type Manifest = z.output<typeof Manifest>;
