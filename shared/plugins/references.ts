// A reference to a plugin with parameters (a pipeline stage, an agent's workflow_parameters) checked when it
// is saved: every parameter declared and of its declared type, every parameter without a default given, and
// the plugin's dependencies available, the one (Single) or ones (Multiple) its selecting parameter picks
// among them. A 400 ValidationError names the first field that does not hold.
import { validationError } from '../errors.js';
import type { BuiltinPlugin } from './builtin.js';
import { TYPE_CHECKS } from '../providers/types/parameter-types.js';

type Declared = Pick<BuiltinPlugin, 'name' | 'parameters' | 'dependencies' | 'selects'>;

/** Where a reference is checked: the field its parameters were given in, and the plugins installed (by name). */
export interface ReferenceContext {
  field: string;
  available: ReadonlySet<string>;
}

/**
 * Checks the parameters given for the plugin; `available` are the names of the plugins its dependencies may
 * name (the catalogue's). A parameter whose declared default is null may be given as null ("not set").
 */
export function checkReference(
  plugin: Declared,
  given: Record<string, unknown>,
  { field, available }: ReferenceContext,
): void {
  const fail = (path: string, message: string) => validationError([{ field: `${field}.${path}`, message }]);
  for (const [name, value] of Object.entries(given)) {
    const declared = plugin.parameters.find((p) => p.name === name);
    if (!declared)
      throw fail(
        name,
        `${name} is not a parameter of ${plugin.name} ` +
          `(${plugin.parameters.map((p) => p.name).join(', ') || 'it has none'})`,
      );
    if (value === null && declared.default_value === null) continue;
    const [ok, what] = TYPE_CHECKS[declared.type];
    if (!ok(value)) throw fail(name, `${name} must be ${what}`);
  }
  for (const p of plugin.parameters)
    if (p.default_value === undefined && !(p.name in given))
      throw fail(p.name, `${p.name} is required by ${plugin.name}`);
  for (const dependency of plugin.dependencies) {
    const names = dependency.dependency_plugin_names;
    const lower = new Set([...available].map((n) => n.toLowerCase()));
    if (!names.some((n) => lower.has(n.toLowerCase())))
      throw validationError([
        { field, message: `${plugin.name} depends on ${names.join(' or ')}, and none of them is installed` },
      ]);
    if (!plugin.selects) continue;
    const chosen =
      plugin.selects in given
        ? given[plugin.selects]
        : plugin.parameters.find((p) => p.name === plugin.selects)?.default_value;
    const picks = dependency.selection_type === 'Single' ? [chosen] : Array.isArray(chosen) ? chosen : [chosen];
    const rule =
      dependency.selection_type === 'Single'
        ? `one of ${names.join(', ')}`
        : `one or more of ${names.join(', ')}, each once`;
    const valid =
      picks.length > 0 &&
      new Set(picks).size === picks.length &&
      picks.every((v) => typeof v === 'string' && names.some((n) => n.toLowerCase() === v.toLowerCase()));
    if (!valid) throw fail(plugin.selects, `${plugin.selects} must name ${rule}`);
  }
}
