// The built-in Dotnet-Builtin-Blocklist plugin's list: the app configuration `Svc:Shielding:Blocklist`, a
// JSON array of strings. A string is a term, matched case-insensitively anywhere in the text (after Unicode
// NFKC normalisation, so look-alike forms match); `/pattern/flags` is a regular expression. Expressions are
// refused on save when they could backtrack catastrophically (safe-regex2: star height above 1), and are
// compiled once per value of the setting.
import safeRegex from 'safe-regex2';

export const BLOCKLIST_SETTING = 'Svc:Shielding:Blocklist';

export interface Blocklist {
  /** The entry the text matches (as written in the list), or undefined. */
  match(text: string): string | undefined;
}

const REGEX_ENTRY = /^\/(.+)\/([imsu]*)$/s;
const MAX_ENTRIES = 10_000;

const normalize = (text: string) => text.normalize('NFKC').toLowerCase();

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
  const expressions: { entry: string; regex: RegExp }[] = [];
  for (const entry of entries) {
    const m = REGEX_ENTRY.exec(entry);
    if (!m) {
      terms.push({ entry, term: normalize(entry) });
      continue;
    }
    let regex: RegExp;
    try {
      regex = new RegExp(m[1] ?? '', m[2]);
    } catch (e) {
      return `entry ${entry} is not a valid regular expression (${e instanceof Error ? e.message : String(e)})`;
    }
    if (!safeRegex(regex)) return `entry ${entry} could take exponential time on some inputs (nested quantifiers); rewrite it`;
    expressions.push({ entry, regex });
  }
  return {
    match(text: string) {
      const folded = normalize(text);
      for (const t of terms) if (folded.includes(t.term)) return t.entry;
      for (const e of expressions) if (e.regex.test(text)) return e.entry;
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
