// The shielding plugin runtime: the built-in plugins of the `Shielding` category, listed under
// the package `Dotnet-Builtin`, and the screening of a text by an agent's plugins in order. A plugin that
// cannot answer (unreachable, slow, a bad answer, a broken list) fails closed: the completion is refused
// with 503 ShieldingUnavailable and nothing unscreened goes on.
import { DomainError, validationError } from '../errors.js';
import { UpstreamError } from '../models/upstream-errors.js';
import { BLOCKLIST_SETTING, cachedBlocklist } from '../matching/blocklist.js';
import { INLINE_WORK, MatchTimeout, offThread } from '../matching/matcher.js';
import { BUILTIN_PACKAGE } from '../providers/types/builtin-package.js';
import { contentSafetyEndpoint, promptShield } from './prompt-shield.js';
import type { ModelGateway } from '../models/gateway.js';
import type { ResourceCache } from '../providers/resource-cache.js';
import type { AppSettings } from '../providers/settings.js';

/** What this module uses of the service (the hosts pass the whole of it). */
export interface ShieldingPluginsDeps {
  readonly models: ModelGateway;
  readonly resourceCache: ResourceCache;
  readonly settings: AppSettings;
}

export type Stage = 'pre' | 'post';
export type Verdict = { verdict: 'allowed' } | { verdict: 'blocked'; reason: string };

/** A text to screen at a stage of a completion, while the caller still waits (its signal). */
export interface ShieldText {
  stage: Stage;
  text: string;
  signal?: AbortSignal | undefined;
}

/** A text to screen by an agent's plugins (by name, in order). */
export interface Screening extends ShieldText {
  plugins: readonly string[];
}

export const REFUSAL_SETTING = 'Svc:Shielding:RefusalMessage';
export const DEFAULT_REFUSAL = 'The request was blocked by the content policy.';

interface ShieldPlugin {
  name: string;
  display_name: string;
  description: string;
  /** Why the plugin cannot run here, or undefined (checked when an agent naming it is saved). */
  unavailable(s: ShieldingPluginsDeps): Promise<string | undefined>;
  screen(s: ShieldingPluginsDeps, shielded: ShieldText): Promise<Verdict>;
}

const blocklistOf = cachedBlocklist();
/** A text that could not be matched in time is blocked: the shield fails closed. */
const timedOut = (e: unknown) => {
  if (e instanceof MatchTimeout) return `the blocklist could not be checked: ${e.message}`;
  throw e;
};

const PLUGINS: readonly ShieldPlugin[] = [
  {
    name: `${BUILTIN_PACKAGE}-Blocklist`,
    display_name: 'Blocklist',
    description:
      `Blocks texts containing a term or matching a /regular expression/ of the app configuration ` +
      `${BLOCKLIST_SETTING} (a JSON array of strings)`,
    unavailable: () => Promise.resolve(undefined),
    async screen(s, { text }) {
      const value = await s.settings.get(BLOCKLIST_SETTING);
      const list = blocklistOf(value);
      if (typeof list === 'string') throw new Error(`${BLOCKLIST_SETTING} ${list}`);
      // A long text against a long list is matched off the request thread, within the time bound.
      const reason =
        list.work(text) <= INLINE_WORK
          ? list.match(text)
          : await offThread.run({ kind: 'blocklist', list: value, text }).catch(timedOut);
      return reason === undefined ? { verdict: 'allowed' } : { verdict: 'blocked', reason };
    },
  },
  {
    name: `${BUILTIN_PACKAGE}-PromptShield`,
    display_name: 'Prompt Shield',
    description:
      'Azure AI Content Safety: Prompt Shields on the user prompt, text analysis on the answer (API endpoint ' +
      'configuration with provider azure-content-safety)',
    async unavailable(s) {
      return (await contentSafetyEndpoint(s))
        ? undefined
        : 'it needs an API endpoint configuration with provider azure-content-safety';
    },
    screen: promptShield,
  },
];

const byName = new Map(PLUGINS.map((p) => [p.name.toLowerCase(), p]));

/** The shielding plugins, for the built-in catalogue (plugins/builtin.ts). */
export function shieldingPlugins(): readonly Pick<ShieldPlugin, 'name' | 'display_name' | 'description'>[] {
  return PLUGINS;
}

/** 400 naming the first plugin of the lists that cannot run here. */
export async function checkRunnable(s: ShieldingPluginsDeps, field: string, names: readonly string[]): Promise<void> {
  for (const [i, name] of names.entries()) {
    const plugin = byName.get(name.toLowerCase());
    const problem = plugin
      ? await plugin.unavailable(s)
      : `${name} is not a shielding plugin this service can run (built in: ${PLUGINS.map((p) => p.name).join(', ')})`;
    if (problem)
      throw validationError([
        { field: `${field}[${i}].plugin_name`, message: plugin ? `${name} cannot run: ${problem}` : problem },
      ]);
  }
}

export interface Block {
  type: 'shielding';
  plugin_name: string;
  stage: Stage;
  verdict: 'blocked';
  reason: string;
}

const unavailable = (plugin: string, why: string) =>
  new DomainError(
    'unavailable',
    'ShieldingUnavailable',
    `Shielding could not screen the text: ${plugin} ${why}; nothing unscreened was passed on`,
  );

/** Runs the plugins in order on the text; the first block, or undefined when every plugin allows it. */
export async function screen(
  s: ShieldingPluginsDeps,
  { plugins, stage, text, signal }: Screening,
): Promise<Block | undefined> {
  for (const name of plugins) {
    const plugin = byName.get(name.toLowerCase());
    // Saved agents name runnable plugins; one removed since (or an obsolete gatekeeper option) is not run.
    if (!plugin) continue;
    let verdict: Verdict;
    try {
      verdict = await plugin.screen(s, { stage, text, signal });
    } catch (e) {
      if (signal?.aborted) throw e;
      const why =
        e instanceof UpstreamError
          ? `failed (${e.code}: ${e.message})`
          : `failed (${e instanceof Error ? e.message : String(e)})`;
      throw unavailable(plugin.name, why);
    }
    if (verdict.verdict === 'blocked')
      return { type: 'shielding', plugin_name: plugin.name, stage, verdict: 'blocked', reason: verdict.reason };
  }
  return undefined;
}

/** What a blocked completion answers (the app configuration, or the default). */
export async function refusalMessage(s: ShieldingPluginsDeps): Promise<string> {
  return (await s.settings.get(REFUSAL_SETTING)) ?? DEFAULT_REFUSAL;
}
