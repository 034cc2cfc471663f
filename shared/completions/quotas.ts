// Completion quotas: definitions from the Svc:Quota:Definitions setting,
// counted per partition over a sliding window in the shared store with atomic increments (so the limit
// holds across instances), and a lockout once exceeded. A quota counts requests, or the total tokens of
// completed calls. Every completion answer carries the IETF RateLimit-Policy and RateLimit headers of the
// quota closest to its limit; an exceeded one answers 429 with the quota response and Retry-After.
import { z } from 'zod';
import type { Principal } from '../auth/principal.js';
import { DomainError } from '../errors.js';
import type { Log } from '../log.js';
import type { AppSettings } from '../providers/settings.js';
import { SettingList, parseNamedList } from '../providers/setting-list.js';
import { NotFoundError, type Container, type Doc, type DocsOf, type PatchOp } from '../store/types.js';
import { incrementCounter } from '../store/update.js';
import { recordQuotaRejection } from '../telemetry/metrics.js';

export const QUOTA_SETTING = 'Svc:Quota:Definitions';

export const QuotaDefinition = z.object({
  name: z.string().min(1),
  description: z.string().optional(),
  /** `CoreAPI:Completions` for all agents, `CoreAPI:Completions:{agentName}` for one. */
  context: z.string().regex(/^CoreAPI:Completions(:.+)?$/),
  /** `requests`: completion requests; `tokens`: total tokens of completed calls. */
  metric: z.enum(['requests', 'tokens']).default('requests'),
  metric_partition: z.enum(['None', 'UserPrincipalName', 'UserIdentifier']),
  metric_limit: z.number().int().positive(),
  metric_window_seconds: z.number().int().positive(),
  lockout_duration_seconds: z.number().int().min(0).default(0),
});
export type QuotaDefinition = z.output<typeof QuotaDefinition>;

/** The definitions a Svc:Quota:Definitions value holds, or why it is not a list of them (names must differ). */
export const parseQuotaDefinitions = (raw: string): QuotaDefinition[] | string =>
  parseNamedList(raw, QuotaDefinition, { list: 'quota definitions', entry: 'definition', noun: 'quota' });

interface CounterDoc extends Doc {
  count?: number;
  /** Token quotas: completed calls counted in `count` (their average sizes a reservation). */
  calls?: number;
  /** Token quotas: tokens reserved by calls admitted and not yet ended. */
  reserved?: number;
  /** Lockout documents: epoch ms until which requests are refused. */
  until?: number;
}

declare module '../store/types.js' {
  interface StoredDocs {
    'quotas/quota': CounterDoc;
  }
}

/** Whether a document of the quotas container is a quota's counter (not a budget's: see budgets.ts). */
export const isQuotaCounter = (doc: DocsOf<'quotas'>): doc is CounterDoc => !doc.pk.startsWith('budget|');

export const QuotaResponse = z
  .object({
    quota_exceeded: z.boolean(),
    quota_name: z.string(),
    retry_after_seconds: z.number().int(),
    message: z.string(),
  })
  .meta({ id: 'QuotaResponse' });

/** Where one quota stands for one request: what is left of its limit, and when the window resets. */
interface Standing {
  quota: QuotaDefinition;
  remaining: number;
  resetSeconds: number;
  /** Seconds until a refused request may be retried; undefined when this request is within the limit. */
  refusedFor?: number;
}

/** A quota name as a structured-field string (RFC 8941): printable ASCII, `"` and `\` escaped. */
const sfString = (name: string) => `"${name.replace(/[^\x20-\x7e]/g, '?').replace(/["\\]/g, (c) => `\\${c}`)}"`;

/** The RateLimit-Policy and RateLimit headers (draft-ietf-httpapi-ratelimit-headers) of one standing. */
function rateLimitHeaders(s: Standing): Record<string, string> {
  const name = sfString(s.quota.name);
  return {
    'ratelimit-policy': `${name};q=${s.quota.metric_limit};w=${s.quota.metric_window_seconds}`,
    ratelimit: `${name};r=${s.remaining};t=${s.resetSeconds}`,
  };
}

function exceeded(s: Standing): DomainError {
  const seconds = Math.max(1, Math.ceil(s.refusedFor ?? 1));
  const name = s.quota.name;
  const body = {
    quota_exceeded: true,
    quota_name: name,
    retry_after_seconds: seconds,
    message: `Quota ${name} exceeded; retry after ${seconds} seconds`,
  };
  return new DomainError('rate-limited', 'QuotaExceeded', body.message, {
    headers: { 'retry-after': String(seconds), ...rateLimitHeaders(s) },
    body,
  });
}

/** Tokens held for admitted calls of token quotas until they end; release it once, whatever the outcome. */
export interface QuotaReservation {
  entries: { pk: string; window: string; tokens: number }[];
}

export class Quotas {
  /** Lockouts this instance already knows of: refused without a store round trip. */
  private readonly lockouts = new Map<string, number>();
  private readonly list: SettingList<QuotaDefinition>;

  constructor(
    settings: AppSettings,
    private readonly counters: Container<CounterDoc>,
    log: Log,
  ) {
    this.list = new SettingList({ settings, key: QUOTA_SETTING, parse: parseQuotaDefinitions, log });
  }

  definitions(): Promise<QuotaDefinition[]> {
    return this.list.get();
  }

  /**
   * Counts one completion request against every quota that applies (all at once: one round of store calls).
   * Throws 429 when one is exceeded; else answers the rate-limit headers of the quota closest to its limit
   * (the smallest remaining share), or none when no quota applies.
   */
  async enforce(
    principal: Principal,
    agentName: string,
  ): Promise<{ headers: Record<string, string>; reservation: QuotaReservation }> {
    const applying = await this.applying(principal, agentName);
    const reservation: QuotaReservation = { entries: [] };
    const standings = await Promise.all(applying.map(({ quota, pk }) => this.stand(quota, pk, reservation)));
    const refused = standings.find((s) => s.refusedFor !== undefined);
    if (refused) {
      await this.release(reservation);
      recordQuotaRejection(refused.quota.name);
      throw exceeded(refused);
    }
    const closest = standings.reduce<Standing | undefined>(
      (min, s) => (!min || s.remaining / s.quota.metric_limit < min.remaining / min.quota.metric_limit ? s : min),
      undefined,
    );
    return { headers: closest ? rateLimitHeaders(closest) : {}, reservation };
  }

  /** Gives back what a call's admission reserved (once, when the call has ended: completed, failed or cancelled). */
  async release(reservation: QuotaReservation | undefined): Promise<void> {
    const entries = reservation?.entries.splice(0) ?? [];
    await Promise.all(
      entries.map(({ pk, window, tokens }) =>
        this.counters.patch(pk, window, [{ op: 'incr', path: 'reserved', value: -tokens }]).catch((e: unknown) => {
          // The window's counter expired meanwhile: nothing is held any more.
          if (!(e instanceof NotFoundError)) throw e;
        }),
      ),
    );
  }

  /** Adds the tokens of a completed call to the token quotas that apply. */
  async recordTokens(principal: Principal, agentName: string, tokens: number): Promise<void> {
    if (tokens <= 0) return;
    const applying = (await this.applying(principal, agentName)).filter(({ quota }) => quota.metric === 'tokens');
    const now = Date.now();
    await Promise.all(
      applying.map(({ quota, pk }) => {
        const w = windowOf(quota, now);
        return this.increment(
          { pk, id: w.id, ttl: w.ttl },
          [
            { op: 'incr', path: 'count', value: tokens },
            { op: 'incr', path: 'calls', value: 1 },
          ],
          { count: tokens, calls: 1 },
        );
      }),
    );
  }

  /**
   * Reserves a token quota's share for one call and answers the tokens used before it (completed calls, and
   * calls admitted before it and still running). The share is the average size of the partition's completed
   * calls, or the whole limit while there are none: calls admitted side by side can then go past the limit
   * by at most about one call, however many arrive at once.
   */
  private async reserveTokens(
    { q, pk, w }: { q: QuotaDefinition; pk: string; w: ReturnType<typeof windowOf> },
    previous: CounterDoc | undefined,
    reservation: QuotaReservation,
  ): Promise<number> {
    const current = await this.counters.read(pk, w.id);
    const sample = (current?.calls ?? 0) > 0 ? current : previous;
    const share = sample?.calls ? Math.max(1, Math.ceil((sample.count ?? 0) / sample.calls)) : q.metric_limit;
    const after = await this.increment({ pk, id: w.id, ttl: w.ttl }, [{ op: 'incr', path: 'reserved', value: share }], {
      count: 0,
      calls: 0,
      reserved: share,
    });
    reservation.entries.push({ pk, window: w.id, tokens: share });
    return (after.count ?? 0) + (after.reserved ?? share) - share;
  }

  private async applying(principal: Principal, agentName: string): Promise<{ quota: QuotaDefinition; pk: string }[]> {
    return (await this.definitions())
      .filter((q) => q.context === 'CoreAPI:Completions' || q.context === `CoreAPI:Completions:${agentName}`)
      .map((quota) => {
        const who =
          quota.metric_partition === 'None'
            ? '*'
            : quota.metric_partition === 'UserPrincipalName'
              ? principal.upn.toLowerCase()
              : principal.id;
        return { quota, pk: `${quota.name}|${quota.context}|${who}` };
      });
  }

  /** Where the quota stands with this request: a request quota counts it, a token quota reserves its share. */
  private async stand(q: QuotaDefinition, pk: string, reservation: QuotaReservation): Promise<Standing> {
    const now = Date.now();
    const w = windowOf(q, now);
    const known = this.lockouts.get(pk);
    if (known !== undefined && known > now)
      return {
        quota: q,
        remaining: 0,
        resetSeconds: Math.ceil((known - now) / 1000),
        refusedFor: (known - now) / 1000,
      };
    const previousWindow = this.counters.read(pk, w.previousId);
    const [lockout, current, previous] = await Promise.all([
      this.counters.read(pk, 'lockout'),
      q.metric === 'requests'
        ? this.increment({ pk, id: w.id, ttl: w.ttl }, [{ op: 'incr', path: 'count', value: 1 }], { count: 1 }).then(
            (d) => d.count ?? 1,
          )
        : previousWindow.then((before) => this.reserveTokens({ q, pk, w }, before, reservation)),
      previousWindow.then((d) => d?.count ?? 0),
    ]);
    if (lockout?.until !== undefined && lockout.until > now) {
      this.lockouts.set(pk, lockout.until);
      return {
        quota: q,
        remaining: 0,
        resetSeconds: Math.ceil((lockout.until - now) / 1000),
        refusedFor: (lockout.until - now) / 1000,
      };
    }
    // Sliding window: the previous window counts in proportion to how much of it still lies in the window.
    const used = previous * (1 - w.elapsed) + current;
    const standing = {
      quota: q,
      remaining: Math.max(0, Math.floor(q.metric_limit - used)),
      resetSeconds: w.resetSeconds,
    };
    // A request quota refuses the request that goes past the limit; a token quota once the limit is reached.
    const over = q.metric === 'requests' ? used > q.metric_limit : used >= q.metric_limit;
    if (!over) return standing;
    if (q.lockout_duration_seconds > 0) {
      const until = now + q.lockout_duration_seconds * 1000;
      await this.counters.upsert({ id: 'lockout', pk, until, ttl: q.lockout_duration_seconds + 5 });
      this.lockouts.set(pk, until);
      return {
        ...standing,
        remaining: 0,
        resetSeconds: q.lockout_duration_seconds,
        refusedFor: q.lockout_duration_seconds,
      };
    }
    return { ...standing, remaining: 0, refusedFor: w.resetSeconds };
  }

  /** Atomic increments of a window counter's fields, creating it (with `initial`) on first use. */
  private increment(
    { pk, id, ttl }: { pk: string; id: string; ttl: number },
    ops: PatchOp[],
    initial: Partial<CounterDoc>,
  ): Promise<CounterDoc> {
    return incrementCounter(this.counters, { pk, id }, { ops, initial: { id, pk, ttl, ...initial } });
  }
}

/** The fixed window `now` falls in, the one before it, and how far into it `now` is. */
function windowOf(q: QuotaDefinition, now: number) {
  const ms = q.metric_window_seconds * 1000;
  const n = Math.floor(now / ms);
  return {
    id: `w${n}`,
    previousId: `w${n - 1}`,
    elapsed: (now % ms) / ms,
    resetSeconds: Math.max(1, Math.ceil((ms - (now % ms)) / 1000)),
    ttl: q.metric_window_seconds * 2 + 60,
  };
}
