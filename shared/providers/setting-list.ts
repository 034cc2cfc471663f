// Settings that hold a JSON array of named definitions (quotas, budgets): checked on save with a message
// naming the entry and field, and read by the pipeline parsed once per value.
import { z } from 'zod';
import type { Log } from '../log.js';
import type { AppSettings } from './settings.js';

/**
 * The definitions `raw` holds, or why it is not a list of them (`what` says how to name the list and an entry); names
 * must differ.
 */
export function parseNamedList<T extends { name: string }>(
  raw: string,
  entry: z.ZodType<T>,
  what: { list: string; entry: string; noun: string },
): T[] | string {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return `must be a JSON array of ${what.list}`;
  }
  const parsed = z.array(entry).max(1000).safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const [index, ...field] = issue?.path ?? [];
    return index === undefined
      ? `must be a JSON array of ${what.list}`
      : `${what.entry} ${String(index)}${field.length ? ` ${field.join('.')}` : ''}: ${issue?.message}`;
  }
  const names = new Set<string>();
  for (const d of parsed.data) {
    if (names.has(d.name)) return `defines the ${what.noun} ${d.name} twice`;
    names.add(d.name);
  }
  return parsed.data;
}

/** Where a list setting comes from: the settings and its key, how its value parses, and where a bad one is logged. */
export interface SettingListSource<T> {
  settings: AppSettings;
  key: string;
  parse: (raw: string) => T[] | string;
  log: Log;
}

/**
 * A list setting as the pipeline reads it: parsed again only when its value changed; a value stored before the save
 * check existed is logged and ignored.
 */
export class SettingList<T> {
  private parsed: { raw: string | undefined; definitions: T[] } = { raw: undefined, definitions: [] };

  constructor(private readonly source: SettingListSource<T>) {}

  async get(): Promise<T[]> {
    const { settings, key, parse, log } = this.source;
    const raw = await settings.get(key);
    if (raw === this.parsed.raw) return this.parsed.definitions;
    let definitions: T[] = [];
    if (raw !== undefined) {
      const parsed = parse(raw);
      if (typeof parsed === 'string') log.warn(`Ignoring invalid ${key}`, { error: parsed });
      else definitions = parsed;
    }
    this.parsed = { raw, definitions };
    return definitions;
  }
}
