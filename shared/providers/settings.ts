// Runtime settings: the app configuration resources of Svc.Configuration, read through a short cache.
import { narrowed } from '../store/narrowed.js';
import type { Container, DocumentStore } from '../store/types.js';
import type { AppConfigurationDoc } from './types/catalog.js';

export const APP_CONFIG_PK = 'Svc.Configuration/appConfigurations';

/** The fields of an app configuration resource that settings read (stores seeded by hand may hold no more). */
export type SettingDoc = Pick<
  AppConfigurationDoc,
  'id' | 'pk' | 'key' | 'value' | 'previous_value' | 'previous_until'
> &
  Partial<Pick<AppConfigurationDoc, 'deleted'>>;

declare module '../store/types.js' {
  interface StoredDocs {
    'resources/setting': SettingDoc;
  }
}

/** The settings of the resources container: every document of the app configurations' partition with a key. */
export const settingsIn = (store: Pick<DocumentStore, 'container'>): Pick<Container<SettingDoc>, 'read'> =>
  narrowed(
    store.container('resources'),
    (doc): doc is SettingDoc => doc.pk === APP_CONFIG_PK && 'key' in doc && typeof doc.key === 'string',
  );

/** Signs webhook deliveries (a secret setting: written, never shown). */
export const SIGNING_SECRET_SETTING = 'Svc:Webhooks:SigningSecret';

/** App configurations whose values are secrets: accepted on write, answered masked on every read. */
export const SECRET_SETTINGS: ReadonlySet<string> = new Set([SIGNING_SECRET_SETTING.toLowerCase()]);

/** What a read answers instead of a secret setting's value. */
export const MASKED_VALUE = '********';

/** How long a secret setting's replaced value stays valid after a change, for receivers to switch over. */
export const ROTATION_MS = 24 * 3600 * 1000;

/** A secret setting's fields as a write keeps them: the replaced value stays valid for ROTATION_MS. */
export function rotated(
  { key, value }: { key: string; value: unknown },
  existing: Pick<AppConfigurationDoc, 'value' | 'previous_value' | 'previous_until'> | undefined,
  now = Date.now(),
): Pick<AppConfigurationDoc, 'previous_value' | 'previous_until'> {
  if (!SECRET_SETTINGS.has(key.toLowerCase()) || !existing) return {};
  if (existing.value !== value)
    return { previous_value: existing.value, previous_until: new Date(now + ROTATION_MS).toISOString() };
  const still = existing.previous_until !== undefined && Date.parse(existing.previous_until) > now;
  return still ? { previous_value: existing.previous_value, previous_until: existing.previous_until } : {};
}

/** An app configuration as reads show it: a secret setting's value (and replaced value) masked. */
export function maskSecret(resource: Record<string, unknown>): Record<string, unknown> {
  if (typeof resource.key !== 'string' || !SECRET_SETTINGS.has(resource.key.toLowerCase())) return resource;
  const { previous_value: _previous, ...shown } = resource;
  return { ...shown, value: MASKED_VALUE };
}

/**
 * Reads settings by key. A write on this instance calls `invalidate`, so it is effective at once here;
 * other instances see it when their cache entry expires (within 30 s; docs/configuration.md, Runtime settings).
 */
export class AppSettings {
  private readonly cache = new Map<string, { value: string | undefined; expires: number }>();
  private readonly derived = new Map<string, { value: Promise<unknown>; expires: number }>();

  constructor(
    private readonly container: Pick<Container<SettingDoc>, 'read'>,
    private readonly ttlMs = 15_000,
  ) {}

  async get(key: string): Promise<string | undefined> {
    // Stored under the case-folded name, as every resource is: keys are found (and cached) without case.
    const id = key.toLowerCase();
    const hit = this.cache.get(id);
    if (hit && hit.expires > Date.now()) return hit.value;
    const doc = await this.container.read(APP_CONFIG_PK, id);
    const value = doc && !doc.deleted ? doc.value : undefined;
    this.cache.set(id, { value, expires: Date.now() + this.ttlMs });
    return value;
  }

  async getNumber(key: string, fallback: number): Promise<number> {
    const raw = await this.get(key);
    const n = raw === undefined || raw.trim() === '' ? NaN : Number(raw);
    return Number.isFinite(n) ? n : fallback;
  }

  /**
   * A value computed from settings (the branding answer), kept as long as a setting is and dropped by any
   * invalidate: a change made here shows at once, one made elsewhere within two cache lifetimes (30 s).
   */
  derive<T>(name: string, compute: () => Promise<T>): Promise<T> {
    const hit = this.derived.get(name);
    if (hit && hit.expires > Date.now()) return hit.value as Promise<T>;
    const value = compute();
    this.derived.set(name, { value, expires: Date.now() + this.ttlMs });
    value.catch(() => this.derived.delete(name));
    return value;
  }

  invalidate(key?: string): void {
    this.derived.clear();
    if (key === undefined) this.cache.clear();
    else this.cache.delete(key.toLowerCase());
  }
}
