// Budgets: money an organisation caps per period (UTC day, ISO week, month), from the Svc:Budgets setting.
// Scopes: the instance, an agent, each user, a cost center (agents with that `cost_center`), each access
// token. Before a model call the call's largest possible cost (its prompt's tokens counted with the
// tokenizer, plus its output limit, at the model's prices) is reserved in every budget that applies, with
// atomic increments in the shared store, so two instances hold one budget; a reservation that would take a
// budget past its limit is undone and the call refused (429 BudgetExceeded). After the call the reservation
// is replaced by what it cost. Amounts are kept in millionths of the currency, as integers.
import { z } from 'zod';
import { ownerKey, type Principal } from '../auth/principal.js';
import { DomainError } from '../errors.js';
import type { Log } from '../log.js';
import type { ChatMessage } from '../models/wire.js';
import { resourceId } from '../providers/types/resource-type.js';
import type { AppSettings } from '../providers/settings.js';
import type { AgentDoc } from '../providers/types/agent.js';
import { SettingList, parseNamedList } from '../providers/setting-list.js';
import { NotFoundError, type Container, type Doc, type DocsOf } from '../store/types.js';
import { incrementCounter } from '../store/update.js';
import { loadTokenCounter } from '../models/tokens.js';

export const BUDGET_SETTING = 'Svc:Budgets';
export const BUDGET_HEADER = 'svc-budget';

export const BudgetDefinition = z
  .object({
    name: z.string().min(1).max(100),
    description: z.string().max(500).optional(),
    scope: z.enum(['instance', 'agent', 'user', 'cost_center', 'access_token']),
    agent_name: z.string().min(1).optional(),
    cost_center: z.string().min(1).optional(),
    limit: z.number().positive().max(1e12),
    currency: z.string().regex(/^[A-Z]{3}$/, 'must be an ISO 4217 code such as USD or EUR'),
    period: z.enum(['day', 'week', 'month']),
  })
  .strict()
  .refine((b) => b.scope !== 'agent' || b.agent_name !== undefined, {
    path: ['agent_name'],
    message: 'an agent budget names its agent_name',
  })
  .refine((b) => (b.scope === 'cost_center') === (b.cost_center !== undefined), {
    path: ['cost_center'],
    message: 'a cost_center budget names its cost_center, and only it',
  })
  .refine((b) => b.scope !== 'instance' || b.agent_name === undefined, {
    path: ['agent_name'],
    message: 'an instance budget covers every agent',
  });
export type BudgetDefinition = z.output<typeof BudgetDefinition>;

/** The budgets a Svc:Budgets value holds, or why it is not a list of them (names must differ). */
export const parseBudgets = (raw: string): BudgetDefinition[] | string =>
  parseNamedList(raw, BudgetDefinition, { list: 'budgets', entry: 'budget', noun: 'budget' });

/** A budget's counter for one period and one partition (a user, a token, or all). */
export interface BudgetCounterDoc extends Doc {
  /** The budget's name, and whose spend it counts: a user's UPN or a token's id (absent: the whole scope). */
  budget?: string;
  subject?: string;
  /** Millionths of the currency spent by calls that ended. */
  spent: number;
  /** Millionths held by calls admitted and not yet ended. */
  reserved: number;
}

declare module '../store/types.js' {
  interface StoredDocs {
    'quotas/budget': BudgetCounterDoc;
  }
}

/** Whether a document of the quotas container is a budget's counter (they share it with the quotas' counters). */
export const isBudgetCounter = (doc: DocsOf<'quotas'>): doc is BudgetCounterDoc =>
  doc.pk.startsWith('budget|') && 'spent' in doc;

const MICROS = 1_000_000;
const toMicros = (amount: number) => Math.round(amount * MICROS);

/**
 * The UTC period `at` falls in: its id (d2026-11-26, w2026-11-23 for the week from that Monday, m2026-11) and when it
 * ends.
 */
export function periodOf(period: BudgetDefinition['period'], at: number): { id: string; start: number; end: number } {
  // The same for a whole UTC day: computed once a day per kind of period (every call asks).
  const day = Math.floor(at / 86_400_000);
  const known = lastPeriods[period];
  if (known?.day === day) return known.value;
  const value = computePeriod(period, at);
  lastPeriods[period] = { day, value };
  return value;
}

const lastPeriods: Partial<
  Record<BudgetDefinition['period'], { day: number; value: { id: string; start: number; end: number } }>
> = {};

function computePeriod(period: BudgetDefinition['period'], at: number): { id: string; start: number; end: number } {
  const d = new Date(at);
  const day = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
  if (period === 'day')
    return { id: `d${new Date(day).toISOString().slice(0, 10)}`, start: day, end: day + 86_400_000 };
  if (period === 'week') {
    const monday = day - ((d.getUTCDay() + 6) % 7) * 86_400_000;
    return { id: `w${new Date(monday).toISOString().slice(0, 10)}`, start: monday, end: monday + 7 * 86_400_000 };
  }
  const start = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  return {
    id: `m${new Date(start).toISOString().slice(0, 7)}`,
    start,
    end: Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1),
  };
}

/**
 * A share of one budget's period held by this instance: taken from the shared counter by one atomic
 * increment of its `reserved`, then given to calls here without a store round trip. What calls spent is
 * moved from `reserved` to `spent` in the store within a second; a share idle for that long is given back.
 */
interface Lease {
  budget: BudgetDefinition;
  pk: string;
  subject: string | undefined;
  period: string;
  /** Millionths taken from the counter and not yet given back or turned into spend. */
  held: number;
  /** Millionths held by calls here that have not ended. */
  inUse: number;
  /** Millionths spent by calls here, not yet written to the counter. */
  spent: number;
  /** The counter's spent + reserved at the last increment: what the other instances had taken then. */
  taken: number;
  /** When a call last used it (epoch ms). */
  used: number;
}

const available = (l: Lease) => l.held - l.inUse - l.spent;

/** What a call holds of its budgets until it ends; settle it once, whatever the outcome. */
export interface BudgetReservation {
  entries: { lease: Lease; micros: number }[];
}

/** A budget as one call sees it: where it stands after the call's reservation. */
export interface BudgetStanding {
  budget: BudgetDefinition;
  /** Millionths left after everything spent and reserved, this call included. */
  remaining: number;
}

/** Share of a budget's limit an instance takes at once: a call that fits in it needs no store round trip. */
const LEASE_SHARE = 0.01;
/** How often leases write their spend to the store and give back what lies idle. */
const FLUSH_MS = 1000;

/** The `Svc-Budget` header of the budget closest to its limit (the smallest share left). */
function budgetHeader(standings: readonly BudgetStanding[]): Record<string, string> {
  const closest = standings.reduce<BudgetStanding | undefined>(
    (min, s) => (!min || s.remaining / toMicros(s.budget.limit) < min.remaining / toMicros(min.budget.limit) ? s : min),
    undefined,
  );
  if (!closest) return {};
  const name = closest.budget.name.replace(/[^\x20-\x7e]/g, '?').replace(/["\\]/g, (c) => `\\${c}`);
  return {
    [BUDGET_HEADER]: `"${name}";remaining=${(Math.max(0, closest.remaining) / MICROS).toFixed(6).replace(/\.?0+$/, '') || '0'}`,
  };
}

function exceeded(b: BudgetDefinition, headers: Record<string, string>): DomainError {
  return new DomainError(
    'rate-limited',
    'BudgetExceeded',
    `Budget ${b.name} (${b.limit} ${b.currency} a ${b.period}) would be exceeded by this call`,
    [],
    {
      'retry-after': String(Math.max(1, Math.ceil((periodOf(b.period, Date.now()).end - Date.now()) / 1000))),
      ...headers,
    },
  );
}

/** Output tokens a call may take when neither the request nor the model sets a limit. */
export const DEFAULT_OUTPUT_LIMIT = 4096;

/** The output limit of a call's request fields. */
export const outputLimit = (parameters: Record<string, unknown>) =>
  Number(parameters.max_tokens ?? parameters.max_completion_tokens) || DEFAULT_OUTPUT_LIMIT;

/** The tokens of a call's messages as the budgets count them (a model that reports no usage is counted so too). */
export async function promptTokensOf(messages: readonly ChatMessage[]): Promise<number> {
  const count = await loadTokenCounter();
  let tokens = 0;
  for (const m of messages) {
    const text =
      typeof m.content === 'string' ? m.content : m.content.map((p) => (p.type === 'text' ? p.text : '')).join('');
    // A few tokens of framing per message, as the chat format adds them.
    tokens += (m.role === 'system' ? systemTokens(text, count) : count(text)) + 4;
  }
  return tokens;
}

/** The largest cost a model call can have: its prompt's tokens and its output limit, at the model's prices. */
export async function largestCost(
  messages: readonly ChatMessage[],
  outputLimit: number,
  prices: { input: number; output: number },
): Promise<number> {
  return (await promptTokensOf(messages)) * prices.input + outputLimit * prices.output;
}

/** Token counts of system messages (an agent's prompt comes with every call), the last 500 kept. */
const systemCounts = new Map<string, number>();
function systemTokens(text: string, countTokens: (text: string) => number): number {
  const known = systemCounts.get(text);
  if (known !== undefined) return known;
  const count = countTokens(text);
  if (systemCounts.size >= 500) systemCounts.delete(systemCounts.keys().next().value as string);
  systemCounts.set(text, count);
  return count;
}

export class Budgets {
  /** This instance's shares, by counter partition and period. */
  private readonly leases = new Map<string, Lease>();
  private readonly flusher: NodeJS.Timeout;
  private readonly list: SettingList<BudgetDefinition>;

  constructor(
    settings: AppSettings,
    private readonly counters: Container<BudgetCounterDoc>,
    private readonly log: Log,
  ) {
    this.list = new SettingList(settings, BUDGET_SETTING, parseBudgets, log);
    this.flusher = setInterval(() => void this.flush(), FLUSH_MS);
    this.flusher.unref();
  }

  definitions(): Promise<BudgetDefinition[]> {
    return this.list.get();
  }

  /**
   * The budgets a call of this principal to this agent counts against, with their counters' partitions.
   * `user` budgets count each user, and each agent access token as a subject of its own. A cost counts in
   * its model's currency: a budget kept in another one cannot count it, so the call is refused (403
   * BudgetCurrencyMismatch) unless `skipOtherCurrencies` (a cost already spent, recorded where it can be).
   * A cost without a currency (a model of an earlier release priced per 1,000 tokens) counts in every budget.
   */
  async applying(
    principal: Principal,
    agent: Pick<AgentDoc, 'name' | 'cost_center'>,
    currency: string | null,
    skipOtherCurrencies = false,
  ): Promise<Applying[]> {
    const out: Applying[] = [];
    for (const budget of await this.definitions()) {
      if (budget.agent_name !== undefined && resourceId(budget.agent_name) !== resourceId(agent.name)) continue;
      let who = '*';
      let subject: string | undefined;
      if (budget.scope === 'cost_center' && budget.cost_center !== agent.cost_center) continue;
      if (budget.scope === 'user') {
        if (principal.kind !== 'user' && principal.kind !== 'agent-token') continue;
        who = principal.id;
        subject = ownerKey(principal.upn);
      }
      if (budget.scope === 'access_token') {
        if (principal.kind !== 'agent-token') continue;
        who = subject = principal.id;
      }
      if (currency !== null && budget.currency !== currency) {
        if (skipOtherCurrencies) continue;
        throw new DomainError(
          'forbidden',
          'BudgetCurrencyMismatch',
          `Budget ${budget.name} is kept in ${budget.currency}, and this call's model is priced in ` +
            `${currency}: its cost cannot be counted against the budget, so the call is refused. Price the ` +
            `model in ${budget.currency}, or keep the budget in ${currency}.`,
        );
      }
      out.push({ budget, pk: counterKey(budget, who), subject });
    }
    return out;
  }

  /**
   * Refuses a call whose budgets are already spent (at admission: before a queued or streamed call starts);
   * else its Svc-Budget header. `currency` (the agent's model's) is asked only when budgets are set.
   */
  async check(
    principal: Principal,
    agent: Pick<AgentDoc, 'name' | 'cost_center'>,
    currency: () => Promise<string | null>,
  ): Promise<Record<string, string>> {
    if ((await this.definitions()).length === 0) return {};
    const applying = await this.applying(principal, agent, await currency());
    if (applying.length === 0) return {};
    const now = Date.now();
    const standings = await Promise.all(
      applying.map(async ({ budget, pk }) => {
        const period = periodOf(budget.period, now).id;
        // A share held here with room left answers without the store.
        const lease = this.leases.get(`${pk}\n${period}`);
        if (lease && available(lease) > 0)
          return { budget, remaining: toMicros(budget.limit) - lease.taken + available(lease) };
        const doc = await this.counters.read(pk, period);
        return { budget, remaining: toMicros(budget.limit) - (doc?.spent ?? 0) - (doc?.reserved ?? 0) };
      }),
    );
    const headers = budgetHeader(standings);
    const spent = standings.find((st) => st.remaining <= 0);
    if (spent) throw exceeded(spent.budget, headers);
    return headers;
  }

  /**
   * Reserves `amount` in every budget that applies, from this instance's share when it has room, else by
   * taking a share from the store; when a budget has no room for it, gives everything back and throws 429
   * BudgetExceeded naming it. The reservation and the Svc-Budget header of the closest budget.
   */
  async reserve(
    principal: Principal,
    agent: Pick<AgentDoc, 'name' | 'cost_center'>,
    amount: () => number | Promise<number>,
    currency: string | null,
  ): Promise<{ reservation: BudgetReservation; headers: Record<string, string> }> {
    const reservation: BudgetReservation = { entries: [] };
    const applying = await this.applying(principal, agent, currency);
    if (applying.length === 0) return { reservation, headers: {} };
    // Counted only when a budget applies: the tokenizer is the costly part.
    const micros = Math.max(0, toMicros(await amount()));
    const now = Date.now();
    const standings: BudgetStanding[] = [];
    let refused: BudgetDefinition | undefined;
    for (const a of applying) {
      const budget = a.budget;
      const lease = await this.leaseFor(a, periodOf(budget.period, now), micros);
      if (!lease) {
        refused = budget;
        standings.push({ budget, remaining: 0 });
        break;
      }
      lease.inUse += micros;
      lease.used = now;
      reservation.entries.push({ lease, micros });
      standings.push({ budget, remaining: toMicros(budget.limit) - lease.taken + available(lease) });
    }
    const headers = budgetHeader(standings);
    if (refused) {
      this.settle(reservation, 0);
      throw exceeded(refused, headers);
    }
    return { reservation, headers };
  }

  /**
   * Replaces a call's reservation with what it cost (0 when it failed before spending); written to the store within a
   * second.
   */
  settle(reservation: BudgetReservation, cost: number): void {
    const spent = Math.max(0, toMicros(cost));
    for (const { lease, micros } of reservation.entries.splice(0)) {
      lease.inUse -= micros;
      lease.spent += spent;
    }
  }

  /** Writes what leases spent and gives back idle ones (every second, and on close: nothing stays held). */
  async flush(all = false): Promise<void> {
    const now = Date.now();
    await Promise.all(
      [...this.leases.entries()].map(async ([key, lease]) => {
        const idle =
          lease.inUse === 0 &&
          (all || now - lease.used >= FLUSH_MS || periodOf(lease.budget.period, now).id !== lease.period);
        const back = idle ? available(lease) : 0;
        const spent = lease.spent;
        if (spent === 0 && back === 0 && !idle) return;
        lease.spent -= spent;
        lease.held -= spent + back;
        if (idle && lease.held <= 0) this.leases.delete(key);
        if (spent === 0 && back === 0) return;
        await this.counters
          .patch(lease.pk, lease.period, [
            { op: 'incr', path: 'reserved', value: -(spent + back) },
            ...(spent > 0 ? [{ op: 'incr' as const, path: 'spent', value: spent }] : []),
          ])
          .catch((e: unknown) => {
            if (!(e instanceof NotFoundError))
              this.log.warn('A budget counter could not be written', {
                budget: lease.budget.name,
                error: e instanceof Error ? e.message : String(e),
              });
          });
      }),
    );
  }

  async close(): Promise<void> {
    clearInterval(this.flusher);
    await this.flush(true);
  }

  /**
   * A lease of this budget's period with room for `micros`: the one held here, or a new share taken from the
   * store (a hundredth of the limit, or the call's amount when larger; the amount alone when the share does
   * not fit). Undefined when not even the amount fits.
   */
  private async leaseFor(
    applying: Applying,
    period: { id: string; end: number },
    micros: number,
  ): Promise<Lease | undefined> {
    const { budget, pk, subject } = applying;
    const key = `${pk}\n${period.id}`;
    const held = this.leases.get(key);
    if (held && available(held) >= micros) return held;
    const limit = toMicros(budget.limit);
    // Topped up: what the lease has left counts towards the call.
    const need = micros - (held ? Math.max(0, available(held)) : 0);
    for (const want of new Set([Math.max(need, Math.floor(limit * LEASE_SHARE)), need])) {
      const after = await this.increment(applying, period, 'reserved', want);
      if (after.spent + after.reserved <= limit) {
        // Another call may have made a lease meanwhile: the share joins it.
        const lease = this.leases.get(key) ?? {
          budget,
          pk,
          subject,
          period: period.id,
          held: 0,
          inUse: 0,
          spent: 0,
          taken: 0,
          used: Date.now(),
        };
        lease.held += want;
        lease.taken = after.spent + after.reserved;
        this.leases.set(key, lease);
        if (available(lease) >= micros) return lease;
        continue;
      }
      await this.counters.patch(pk, period.id, [{ op: 'incr', path: 'reserved', value: -want }]);
    }
    return undefined;
  }

  /**
   * Adds a cost spent without a reservation to every budget that applies: a realtime call's response, whose
   * cost is known only once the model has answered. The call's budgets were checked when it started.
   */
  async charge(
    principal: Principal,
    agent: Pick<AgentDoc, 'name' | 'cost_center'>,
    currency: string | null,
    cost: number,
  ): Promise<void> {
    const micros = toMicros(cost);
    if (micros <= 0) return;
    const now = Date.now();
    await Promise.all(
      (await this.applying(principal, agent, currency, true)).map((a) =>
        this.increment(a, periodOf(a.budget.period, now), 'spent', micros),
      ),
    );
  }

  /**
   * Atomically adds to a counter's `reserved` or `spent`, creating the counter (kept a day past its period) on first
   * use.
   */
  private increment(
    { budget, pk, subject }: Applying,
    period: { id: string; end: number },
    field: 'reserved' | 'spent',
    micros: number,
  ): Promise<BudgetCounterDoc> {
    const ttl = Math.ceil((period.end - Date.now()) / 1000) + 86_400;
    const first = {
      id: period.id,
      pk,
      ttl,
      budget: budget.name,
      ...(subject === undefined ? {} : { subject }),
      spent: 0,
      reserved: 0,
      [field]: micros,
    };
    return incrementCounter(this.counters, pk, period.id, [{ op: 'incr', path: field, value: micros }], first);
  }

  /**
   * Where a budget stands in its current period, from its counters: the whole scope's, or each user's or
   * token's. `reserved` includes the shares instances hold (given back within a second when idle).
   */
  async standing(
    budget: BudgetDefinition,
    now = Date.now(),
  ): Promise<{
    period: { start: number; end: number };
    subjects: { subject: string | null; spent: number; reserved: number; remaining: number }[];
  }> {
    const period = periodOf(budget.period, now);
    const perSubject = budget.scope === 'user' || budget.scope === 'access_token';
    const counters = perSubject
      ? (
          await this.counters.query({
            where: [
              { field: 'pk', op: 'startsWith', value: counterKey(budget, '') },
              { field: 'id', op: 'eq', value: period.id },
            ],
          })
        ).items
      : [await this.counters.read(counterKey(budget, '*'), period.id)].filter((c) => c !== undefined);
    const limit = toMicros(budget.limit);
    const subjects = counters.map((c) => ({
      subject: perSubject ? (c.subject ?? c.pk.slice(counterKey(budget, '').length)) : null,
      spent: c.spent / MICROS,
      reserved: c.reserved / MICROS,
      remaining: Math.max(0, limit - c.spent - c.reserved) / MICROS,
    }));
    if (!perSubject && subjects.length === 0)
      subjects.push({ subject: null, spent: 0, reserved: 0, remaining: budget.limit });
    return {
      period,
      subjects: subjects.sort((a, b) => b.spent - a.spent || String(a.subject).localeCompare(String(b.subject))),
    };
  }
}

interface Applying {
  budget: BudgetDefinition;
  /** The counter's partition. */
  pk: string;
  /** A user's UPN or a token's id for budgets per user or token. */
  subject: string | undefined;
}

/** A budget's counter partition: the whole scope (`*`), or one user's or token's (its id). */
const counterKey = (budget: BudgetDefinition, who: string) => `budget|${budget.name}|${who}`;
