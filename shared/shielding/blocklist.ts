// The built-in Dotnet-Builtin-Blocklist plugin's list: the app configuration `Svc:Shielding:Blocklist`, a
// JSON array of strings. A string is a term, matched case-insensitively anywhere in the text (after Unicode
// NFKC normalisation, so look-alike forms match); `/pattern/flags` is a regular expression, run by RE2's
// linear-time engine (re2js), so no expression can make matching take more than time proportional to the
// text: expressions RE2 cannot run (backreferences, lookaround) are refused on save. Matching all entries
// has a time bound too, and a text that reaches it is blocked (fails closed). Compiled once per value.
import { RE2JS } from 're2js';

export const BLOCKLIST_SETTING = 'Svc:Shielding:Blocklist';

export interface Blocklist {
  /** Why the text is blocked (the entry it matches, as written in the list, or the time bound), or undefined. */
  match(text: string): string | undefined;
}

/** Time allowed for matching one text against every entry; past it the text is blocked. */
export const MATCH_BUDGET_MS = 250;

const REGEX_ENTRY = /^\/(.+)\/([imsu]*)$/s;
const MAX_ENTRIES = 10_000;

const normalize = (text: string) => text.normalize('NFKC').toLowerCase();

/** JavaScript's flags as RE2's: `u` is RE2's default; `g` and `y` mean nothing to a yes/no match. */
const flagsOf = (flags: string) =>
  (flags.includes('i') ? RE2JS.CASE_INSENSITIVE : 0) | (flags.includes('m') ? RE2JS.MULTILINE : 0) | (flags.includes('s') ? RE2JS.DOTALL : 0);

/** The compiled list, or why the value is not a valid list (for a 400 on save, and a fail-closed shield). */
export function compileBlocklist(value: string | undefined): Blocklist | string {
  if (value === undefined || value.trim() === '') return { match: () => undefined };
  let entries: unknown;
  try {
    entries = JSON.parse(value);
  } catch {
    return 'must be a JSON array of strings';
  }
  if (!Array.isArray(entries) || !entries.every((e): e is string => typeof e === 'string' && e.length > 0)) return 'must be a JSON array of non-empty strings';
  if (entries.length > MAX_ENTRIES) return `may hold at most ${MAX_ENTRIES} entries`;
  const terms: { entry: string; term: string }[] = [];
  const expressions: { entry: string; regex: RE2JS }[] = [];
  for (const entry of entries) {
    const m = REGEX_ENTRY.exec(entry);
    if (!m) {
      terms.push({ entry, term: normalize(entry) });
      continue;
    }
    let regex: RE2JS;
    try {
      regex = RE2JS.compile(m[1] ?? '', flagsOf(m[2] ?? ''));
    } catch (e) {
      return `entry ${entry} is not a regular expression the linear-time engine (RE2 syntax: no backreferences or lookaround) can run: ${e instanceof Error ? e.message : String(e)}`;
    }
    expressions.push({ entry, regex });
  }
  return {
    match(text: string) {
      const started = performance.now();
      const folded = normalize(text);
      for (const t of terms) if (folded.includes(t.term)) return `matches the blocklist entry ${t.entry}`;
      for (const e of expressions) {
        if (performance.now() - started > MATCH_BUDGET_MS) return `the blocklist could not be checked within ${MATCH_BUDGET_MS} ms`;
        if (e.regex.matcher(text).find()) return `matches the blocklist entry ${e.entry}`;
      }
      return undefined;
    },
  };
}

/** Compiles a setting's value once per value: the list is matched on every completion. */
export function cachedBlocklist(): (value: string | undefined) => Blocklist | string {
  let last: { value: string | undefined; list: Blocklist | string } | undefined;
  return (value) => {
    if (!last || last.value !== value) last = { value, list: compileBlocklist(value) };
    return last.list;
  };
}
