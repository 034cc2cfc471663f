// Analytics at volume: Overview, AllAgents and TokenUsageDashboard over many messages and token usage
// records in the embedded store, with time, memory and store round trips per query.
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { runAnalytics } from '../shared/analytics/query.js';
import { AnalyticsRequest } from '../shared/analytics/request.js';
import { loadLocalKey, mintLocalToken } from '../shared/auth/local-idp.js';
import { ROLE_IDS } from '../shared/providers/types/roles.js';
import type { UsageDoc } from '../shared/completions/usage.js';
import { loadConfig } from '../shared/config.js';
import type { MessageDoc } from '../shared/conversations/conversations.js';
import { createLog } from '../shared/log.js';
import { grant } from '../shared/registry/rules/agent.js';
import { createServices } from '../shared/services.js';
import { countingStore } from '../shared/store/counting-store.js';
import { openSqliteStore } from '../shared/store/sqlite-store.js';

export interface AnalyticsBenchRow {
  request: string;
  /** First run: includes starting the store's reader threads and warming their caches. */
  'first ms': number;
  ms: number;
  'heap delta MB': number;
  'rss MB': number;
  'store round trips': number;
}

async function seed(store: ReturnType<typeof openSqliteStore>, messages: number, usage: number): Promise<number> {
  const started = Date.now();
  const now = Date.now();
  const at = (i: number, n: number) =>
    new Date(now - 29 * 86_400_000 + Math.floor((i / n) * 29 * 86_400_000)).toISOString();
  const sessions = store.container('sessions');
  const chunk = 20_000;
  for (let i = 0; i < messages; i += chunk) {
    const docs: MessageDoc[] = [];
    for (let j = i; j < Math.min(messages, i + chunk); j++) {
      const user = `user${j % 500}@example.com`;
      const ts = at(j, messages);
      docs.push({
        id: randomUUID(),
        pk: user,
        type: 'Message',
        session_id: `s-${Math.floor(j / 10) % 20_000}`,
        sender: j % 2 ? 'Assistant' : 'User',
        sender_display_name: 'x',
        text: 'hello there',
        tokens: 10,
        timestamp: ts,
        day: ts.slice(0, 10),
        hour: Number(ts.slice(11, 13)),
        upn: user,
        operation_id: `op-${Math.floor(j / 2)}`,
        agent_name: `agent-${j % 20}`,
      });
    }
    await sessions.createMany(docs);
  }
  const records = store.container('usage');
  for (let i = 0; i < usage; i += chunk) {
    const docs: UsageDoc[] = [];
    for (let j = i; j < Math.min(usage, i + chunk); j++) {
      const user = `user${j % 500}@example.com`;
      const ts = at(j, usage);
      docs.push({
        id: `op-${j}`,
        pk: user,
        operation_id: `op-${j}`,
        session_id: `s-${j % 20_000}`,
        upn: user,
        user_id: user,
        agent_name: `agent-${j % 20}`,
        model_deployment_name: `model-${j % 3}`,
        prompt_tokens: 100,
        completion_tokens: 50,
        total_tokens: 150,
        cost: 0.001,
        timestamp: ts,
        day: ts.slice(0, 10),
        duration_ms: 800,
        status: 'Completed',
      });
    }
    await records.createMany(docs);
  }
  return Date.now() - started;
}

export async function benchAnalytics(
  messages: number,
  usage: number,
): Promise<{ seedMs: number; rows: AnalyticsBenchRow[] }> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'bench-analytics-'));
  const sqlite = openSqliteStore(path.join(dataDir, 'store.db'));
  const seedMs = await seed(sqlite, messages, usage);
  const store = countingStore(sqlite);
  const config = loadConfig({ DATA_DIR: dataDir, CORE_PORT: '0', MANAGEMENT_PORT: '0' });
  const services = await createServices(config, { store, log: createLog({ quiet: true }) });
  if (config.auth.kind !== 'local') throw new Error('local identity provider expected');
  const principal = await services.bearer.verify(
    await mintLocalToken(await loadLocalKey(config.auth.keyFile), config.auth.issuer, config.auth.audience, {
      upn: 'analyst@example.com',
    }),
  );
  await grant(
    { services, principal, objectId: '' },
    {
      grantee: { id: principal.id, type: 'User' },
      roleId: ROLE_IDS.analyticsReader,
      scope: `/instances/${config.instanceId}`,
      note: 'bench',
    },
  );

  const reports = [
    ['Overview', 0],
    ['AllAgents', 1],
    ['TokenUsageDashboard', 17],
  ] as const;
  const first = new Map<string, number>();
  for (const [name, type] of reports) {
    const started = performance.now();
    await runAnalytics(services, principal, AnalyticsRequest.parse({ request_type: type }));
    first.set(name, Math.round(performance.now() - started));
  }
  const rows: AnalyticsBenchRow[] = [];
  for (const [name, type] of reports) {
    store.reset();
    global.gc?.();
    const heap = process.memoryUsage().heapUsed;
    const started = performance.now();
    await runAnalytics(services, principal, AnalyticsRequest.parse({ request_type: type }));
    const ms = performance.now() - started;
    const counts = [...store.counts.values()].reduce((n, c) => n + c.reads + c.queries + c.writes, 0);
    rows.push({
      request: name,
      'first ms': first.get(name) ?? 0,
      ms: Math.round(ms),
      'heap delta MB': Math.round(((process.memoryUsage().heapUsed - heap) / 1048576) * 10) / 10,
      'rss MB': Math.round(process.memoryUsage().rss / 1048576),
      'store round trips': counts,
    });
  }
  await services.close();
  return { seedMs, rows };
}
