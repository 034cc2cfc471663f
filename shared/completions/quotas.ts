// Completion quotas (spec 7, 8; CONTRACT.md section 8): definitions from the Svc:Quota:Definitions setting,
// a sliding window per partition counted in the shared store with atomic increments (correct across
// instances), and a lockout once exceeded. 429 with the quota response and Retry-After.
import { z } from 'zod';
import type { Principal } from '../auth/principal.js';
import { ApiError } from '../http/errors.js';
import type { Log } from '../log.js';
import type { AppSettings } from '../providers/settings.js';
import { ConflictError, NotFoundError, type Container, type Doc } from '../store/types.js';

export const QUOTA_SETTING = 'Svc:Quota:Definitions';

export const QuotaDefinition = z.object({
  name: z.string().min(1),
  description: z.string().optional(),
  /** `CoreAPI:Completions` for all agents, `CoreAPI:Completions:{agentName}` for one. */
  context: z.string().regex(/^CoreAPI:Completions(:.+)?$/),
  metric_partition: z.enum(['None', 'UserPrincipalName', 'UserIdentifier']),
  metric_limit: z.number().int().positive(),
  metric_window_seconds: z.number().int().positive(),
  lockout_duration_seconds: z.number().int().min(0).default(0),
});
export type QuotaDefinition = z.output<typeof QuotaDefinition>;

interface CounterDoc extends Doc {
  count?: number;
  /** Lockout documents: epoch ms until which requests are refused. */
  until?: number;
}

export const QuotaResponse = z
  .object({ quota_exceeded: z.boolean(), quota_name: z.string(), retry_after_seconds: z.number().int(), message: z.string() })
  .meta({ id: 'QuotaResponse' });

function exceeded(name: string, retryAfter: number): ApiError {
  const seconds = Math.max(1, Math.ceil(retryAfter));
  const body = { quota_exceeded: true, quota_name: name, retry_after_seconds: seconds, message: `Quota ${name} exceeded; retry after ${seconds} seconds` };
  return new ApiError(429, 'QuotaExceeded', body.message, [], { 'retry-after': String(seconds) }, body);
}

export class Quotas {
  /** Lockouts this instance already knows of: refused without a store round trip. */
  private readonly lockouts = new Map<string, number>();
  private parsed: { raw: string | undefined; definitions: QuotaDefinition[] } = { raw: undefined, definitions: [] };

  constructor(
    private readonly settings: AppSettings,
    private readonly counters: Container<CounterDoc>,
    private readonly log: Log,
  ) {}

  async definitions(): Promise<QuotaDefinition[]> {
    const raw = await this.settings.get(QUOTA_SETTING);
    if (raw === this.parsed.raw) return this.parsed.definitions;
    let definitions: QuotaDefinition[] = [];
    if (raw !== undefined) {
      try {
        definitions = z.array(QuotaDefinition).parse(JSON.parse(raw));
      } catch (e) {
        this.log.warn(`Ignoring invalid ${QUOTA_SETTING}`, { error: e instanceof Error ? e.message : String(e) });
      }
    }
    this.parsed = { raw, definitions };
    return definitions;
  }

  /** Counts one completion request against every quota that applies; throws 429 when one is exceeded. */
  async enforce(principal: Principal, agentName: string): Promise<void> {
    for (const q of await this.definitions()) {
      if (q.context !== 'CoreAPI:Completions' && q.context !== `CoreAPI:Completions:${agentName}`) continue;
      const who = q.metric_partition === 'None' ? '*' : q.metric_partition === 'UserPrincipalName' ? principal.upn.toLowerCase() : principal.id;
      await this.count(q, `${q.name}|${q.context}|${who}`);
    }
  }

  private async count(q: QuotaDefinition, pk: string): Promise<void> {
    const now = Date.now();
    const known = this.lockouts.get(pk);
    if (known !== undefined && known > now) throw exceeded(q.name, (known - now) / 1000);
    const lockout = await this.counters.read(pk, 'lockout');
    if (lockout?.until !== undefined && lockout.until > now) {
      this.lockouts.set(pk, lockout.until);
      throw exceeded(q.name, (lockout.until - now) / 1000);
    }

    const windowMs = q.metric_window_seconds * 1000;
    const window = Math.floor(now / windowMs);
    const ttl = q.metric_window_seconds * 2 + 60;
    const current = await this.increment(pk, `w${window}`, ttl);
    const previous = (await this.counters.read(pk, `w${window - 1}`))?.count ?? 0;
    // Sliding window: the previous window counts in proportion to how much of it still lies in the window.
    const elapsed = (now % windowMs) / windowMs;
    const estimate = previous * (1 - elapsed) + current;
    if (estimate <= q.metric_limit) return;

    if (q.lockout_duration_seconds > 0) {
      const until = now + q.lockout_duration_seconds * 1000;
      await this.counters.upsert({ id: 'lockout', pk, until, ttl: q.lockout_duration_seconds + 5 });
      this.lockouts.set(pk, until);
      throw exceeded(q.name, q.lockout_duration_seconds);
    }
    throw exceeded(q.name, (windowMs - (now % windowMs)) / 1000);
  }

  /** Atomic increment of a window counter, creating it on first use. */
  private async increment(pk: string, id: string, ttl: number): Promise<number> {
    for (;;) {
      try {
        return (await this.counters.patch(pk, id, [{ op: 'incr', path: 'count', value: 1 }])).count ?? 1;
      } catch (e) {
        if (!(e instanceof NotFoundError)) throw e;
      }
      try {
        return (await this.counters.create({ id, pk, count: 1, ttl })).count ?? 1;
      } catch (e) {
        if (!(e instanceof ConflictError)) throw e;
      }
    }
  }
}
