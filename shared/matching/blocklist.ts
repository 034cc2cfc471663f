// The built-in Dotnet-Builtin-Blocklist plugin's list: the app configuration `Svc:Shielding:Blocklist`, a
// JSON array of strings. A string is a term, matched case-insensitively anywhere in the text (after Unicode
// NFKC normalisation, so look-alike forms match, and with invisible format characters removed, so a zero-width
// space does not split a word); `/pattern/flags` is a regular expression, run on the same text by RE2's
// linear-time engine (re2js), so no expression can make matching take more than time proportional to the
// text times its program: expressions RE2 cannot run (backreferences, lookaround) and programs past a size
// are refused on save. A text whose matching would take more than a little work is matched off the request
// thread (matcher.ts) with a time bound, and a text that reaches it is blocked (fails closed). Compiled once per value.
import { RE2JS } from 're2js';

export const BLOCKLIST_SETTING = 'Svc:Shielding:Blocklist';

export interface Blocklist {
  /** Why the text is blocked (the entry it matches, as written in the list, or the time bound), or undefined. */
  match(text: string, budgetMs?: number): string | undefined;
  /** The work of matching a text, in steps: its length times the terms and the expressions' programs. */
  work(text: string): number;
}

/** Time allowed for matching one text against every entry; past it the text is blocked. */
export const MATCH_BUDGET_MS = 250;

const REGEX_ENTRY = /^\/(.+)\/([imsu]*)$/s;
const MAX_ENTRIES = 10_000;
/** The largest program one expression may compile to (RE2 instructions; `[a-z]{1,1000}` is about 2,000). */
export const MAX_PROGRAM_SIZE = 2_000;

/**
 * A text as the list sees it: look-alike forms as their plain ones (NFKC: full-width letters, ligatures) and
 * without the invisible format characters (zero-width spaces and joiners, soft hyphens) that split a word.
 */
const visible = (text: string) => text.normalize('NFKC').replace(/\p{Cf}+/gu, '');
/** Terms match without regard to case too. */
const normalize = (text: string) => visible(text).toLowerCase();

/** JavaScript's flags as RE2's: `u` is RE2's default; `g` and `y` mean nothing to a yes/no match. */
const flagsOf = (flags: string) =>
  (flags.includes('i') ? RE2JS.CASE_INSENSITIVE : 0) |
  (flags.includes('m') ? RE2JS.MULTILINE : 0) |
  (flags.includes('s') ? RE2JS.DOTALL : 0);

/** The compiled list, or why the value is not a valid list (for a 400 on save, and a fail-closed shield). */
export function compileBlocklist(value: string | undefined): Blocklist | string {
  if (value === undefined || value.trim() === '') return { match: () => undefined, work: () => 0 };
  let entries: unknown;
  try {
    entries = JSON.parse(value);
  } catch {
    return 'must be a JSON array of strings';
  }
  if (!Array.isArray(entries) || !entries.every((e): e is string => typeof e === 'string' && e.length > 0))
    return 'must be a JSON array of non-empty strings';
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
      return (
        `entry ${entry} is not a regular expression the linear-time engine (RE2 syntax: no backreferences or ` +
        `lookaround) can run: ${e instanceof Error ? e.message : String(e)}`
      );
    }
    if (regex.programSize() > MAX_PROGRAM_SIZE)
      return (
        `entry ${entry} compiles to ${regex.programSize()} instructions; at most ${MAX_PROGRAM_SIZE} are ` +
        `allowed (a smaller repetition count, or several entries)`
      );
    expressions.push({ entry, regex });
  }
  const steps = terms.length + expressions.reduce((n, e) => n + e.regex.programSize(), 0);
  return {
    match(text: string, budgetMs = MATCH_BUDGET_MS) {
      const started = performance.now();
      const shown = visible(text);
      const folded = shown.toLowerCase();
      for (const t of terms) if (folded.includes(t.term)) return `matches the blocklist entry ${t.entry}`;
      for (const e of expressions) {
        if (performance.now() - started > budgetMs) return `the blocklist could not be checked within ${budgetMs} ms`;
        if (e.regex.matcher(shown).find()) return `matches the blocklist entry ${e.entry}`;
      }
      return undefined;
    },
    work: (text) => text.length * steps,
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
