// The whole service in-process on free ports over real HTTP, against the test Azurite, with a store
// that counts its round trips.
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { inject } from 'vitest';
import { QUEUE_HANDLERS, ROUTES, UPGRADES } from '../../functions/groups.js';
import { LOCAL_DEFAULT_USER } from '../../shared/auth/local-idp.js';
import { startStandalone } from '../../shared/http/standalone.js';
import { openSqliteStore } from '../../shared/store/sqlite-store.js';
import { countingStore } from '../../shared/store/counting-store.js';
import type { DocumentStore } from '../../shared/store/types.js';
import { INSTANCE, tempDir, testServices, type TestServices } from './services.js';
import type { Timer } from '../../shared/queues/timer.js';

export interface TestApp {
  dataDir: string;
  /** The settings the app runs with, for child processes that share its store and queues. */
  env: Record<string, string>;
  core: string;
  management: string;
  services: TestServices;
  store: ReturnType<typeof countingStore>;
  /** A bearer token; the default is the bootstrap owner. */
  token(upn?: string, extra?: { groups?: string[]; roles?: string[] }): Promise<string>;
  /** fetch with a bearer token for `as` (a UPN) or the owner, JSON in and out. */
  call(
    method: string,
    url: string,
    options?: { as?: string; body?: unknown; headers?: Record<string, string> },
  ): Promise<{ status: number; body: unknown; headers: Headers }>;
  close(): Promise<void>;
}

export async function startTestApp(
  env: Record<string, string> = {},
  options: { consumers?: boolean; store?: DocumentStore; timers?: readonly Timer[] } = {},
): Promise<TestApp> {
  const dir = tempDir();
  // Test files run in parallel against one Azurite: each app gets its own queue.
  env = {
    ASYNC_COMPLETIONS_QUEUE: `ac-${randomUUID().slice(0, 8)}`,
    WEBHOOKS_QUEUE: `wh-${randomUUID().slice(0, 8)}`,
    PIPELINES_QUEUE: `dp-${randomUUID().slice(0, 8)}`,
    PIPELINE_EVENTS_QUEUE: `pe-${randomUUID().slice(0, 8)}`,
    EVALUATIONS_QUEUE: `ev-${randomUUID().slice(0, 8)}`,
    PACKAGES_CONTAINER: `pp-${randomUUID().slice(0, 8)}`,
    ...env,
  };
  const store = countingStore(options.store ?? openSqliteStore(path.join(dir, 'store.db')));
  const services = await testServices({
    env: { DATA_DIR: dir, AzureWebJobsStorage: inject('storageConnectionString'), ...env },
    store,
  });
  const app = await startStandalone(ROUTES, QUEUE_HANDLERS, services, { ...options, upgrades: UPGRADES });
  const token = (upn?: string, extra: { groups?: string[]; roles?: string[] } = {}) =>
    upn === undefined
      ? services.token({ upn: LOCAL_DEFAULT_USER.upn, oid: LOCAL_DEFAULT_USER.oid, ...extra })
      : services.token({ upn, ...extra });
  return {
    dataDir: dir,
    env: { DATA_DIR: dir, AzureWebJobsStorage: inject('storageConnectionString'), ...env },
    core: app.coreUrl,
    management: app.managementUrl,
    services,
    store,
    token,
    call: caller(token),
    async close() {
      await app.close();
      await services.close();
    },
  };
}

/** `call` of a test app: fetch with a bearer token for `as` (a UPN) or the owner, JSON in and out. */
export function caller(token: (upn?: string) => Promise<string>): TestApp['call'] {
  return async (method, url, options = {}) => {
    const headers: Record<string, string> = { authorization: `Bearer ${await token(options.as)}`, ...options.headers };
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(url, {
      method,
      headers,
      ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
    });
    const text = await res.text();
    let body: unknown = text;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      // not JSON: keep the text
    }
    return { status: res.status, body, headers: res.headers };
  };
}

/** What helpers that only call the APIs need: the bundled service answers the same. */
export type ApiClient = Pick<TestApp, 'core' | 'management' | 'call'>;

export const providers = (app: ApiClient, provider: string) =>
  `${app.management}/instances/${INSTANCE}/providers/${provider}`;
