// Runtime settings: the app configuration resources of Svc.Configuration, read through a short cache.
import type { Container, Doc } from '../store/types.js';

export const APP_CONFIG_PK = 'Svc.Configuration/appConfigurations';

/** The stored fields of an app configuration resource that settings need. */
export interface AppConfigDoc extends Doc {
  key: string;
  value: string;
  deleted?: boolean;
}

/**
 * Reads settings by key. A write on this instance calls `invalidate`, so it is effective at once here;
 * other instances see it when their cache entry expires (CONTRACT.md section 8: within 30 s).
 */
export class AppSettings {
  private readonly cache = new Map<string, { value: string | undefined; expires: number }>();
  private readonly derived = new Map<string, { value: Promise<unknown>; expires: number }>();

  constructor(
    private readonly container: Container<AppConfigDoc>,
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
