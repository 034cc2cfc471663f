// Services for tests: real modules, an in-memory SQLite store, a temp data folder for the local IdP key.
import type { Producer } from '../../shared/queues/producer.js';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadLocalKey, mintLocalToken, type MintOptions } from '../../shared/auth/local-idp.js';
import { loadConfig, type Config } from '../../shared/config.js';
import type { Log } from '../../shared/log.js';
import { createServices, type Services } from '../../shared/services.js';
import { openSqliteStore } from '../../shared/store/sqlite-store.js';
import type { DocumentStore } from '../../shared/store/types.js';

export const INSTANCE = '7a3c5a2e-4b1f-4c8e-9d6a-0f2b8e1c4d5a';

/** A log that keeps records for assertions instead of printing them. */
export function memoryLog(): Log & { records: { level: string; message: string; fields?: Record<string, unknown> }[] } {
  const records: { level: string; message: string; fields?: Record<string, unknown> }[] = [];
  const add = (level: string) => (message: string, fields?: Record<string, unknown>) => {
    records.push({ level, message, ...(fields ? { fields } : {}) });
  };
  return { records, info: add('info'), warn: add('warn'), error: add('error') };
}

export const tempDir = (prefix = 'agent-platform-') => mkdtempSync(path.join(tmpdir(), prefix));

export function testConfig(env: Record<string, string> = {}): Config {
  return loadConfig({ DATA_DIR: tempDir(), CORE_PORT: '0', MANAGEMENT_PORT: '0', ...env }, '1.2.3');
}

export interface TestServices extends Services {
  log: ReturnType<typeof memoryLog>;
  token(options?: Partial<MintOptions>): Promise<string>;
}

/** Services over an in-memory store (or the given one), with a token minter for the local IdP. */
export async function testServices(
  options: { env?: Record<string, string>; store?: DocumentStore; producer?: Producer } = {},
): Promise<TestServices> {
  const config = options.env?.DATA_DIR
    ? loadConfig({ CORE_PORT: '0', MANAGEMENT_PORT: '0', ...options.env }, '1.2.3')
    : testConfig(options.env);
  const log = memoryLog();
  const services = await createServices(config, {
    store: options.store ?? openSqliteStore(':memory:'),
    log,
    ...(options.producer ? { producer: options.producer } : {}),
  });
  return {
    ...services,
    log,
    async token(o = {}) {
      if (config.auth.kind !== 'local') throw new Error('token() needs the local identity provider');
      const key = await loadLocalKey(config.auth.keyFile);
      return mintLocalToken(key, config.auth.issuer, config.auth.audience, { upn: 'alice@example.com', ...o });
    },
  };
}

/** A producer that keeps what is sent, per queue, instead of sending it. */
export function memoryProducer(): Producer & { sent: { queue: string; message: unknown }[] } {
  const sent: { queue: string; message: unknown }[] = [];
  return {
    sent,
    send: (queue, message) => Promise.resolve(void sent.push({ queue, message })),
    onSend: () => () => undefined,
  };
}
