// Budgets: money an organisation caps per period (UTC day, ISO week, month), from the Svc:Budgets setting.
// Scopes: the instance, an agent, each user, a cost center (agents with that `cost_center`), each access
// token. Before a model call the call's largest possible cost (its prompt's tokens counted with the
// tokenizer, plus its output limit, at the model's prices) is reserved in every budget that applies, with
// atomic increments in the shared store, so two instances hold one budget; a reservation that would take a
// budget past its limit is undone and the call refused (429 BudgetExceeded). After the call the reservation
// is replaced by what it cost. Amounts are kept in millionths of the currency, as integers.
import { encode } from 'gpt-tokenizer';
import { z } from 'zod';
import type { Principal } from '../auth/principal.js';
import { DomainError } from '../errors.js';
import type { Log } from '../log.js';
import type { ChatMessage } from '../models/wire.js';
import { resourceId } from '../providers/resource-type.js';
import type { AppSettings } from '../providers/settings.js';
import type { AgentDoc } from '../providers/types/agent.js';
import { ConflictError, NotFoundError, type Container, type Doc, type PatchOp } from '../store/types.js';

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
  .refine((b) => b.scope !== 'agent' || b.agent_name !== undefined, { path: ['agent_name'], message: 'an agent budget names its agent_name' })
  .refine((b) => (b.scope === 'cost_center') === (b.cost_center !== undefined), { path: ['cost_center'], message: 'a cost_center budget names its cost_center, and only it' })
  .refine((b) => b.scope !== 'instance' || b.agent_name === undefined, { path: ['agent_name'], message: 'an instance budget covers every agent' });
export type BudgetDefinition = z.output<typeof BudgetDefinition>;

/** The budgets a Svc:Budgets value holds, or why it is not a list of them (names must differ). */
export function parseBudgets(raw: string): BudgetDefinition[] | string {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return 'must be a JSON array of budgets';
  }
  const parsed = z.array(BudgetDefinition).max(1000).safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const [index, ...field] = issue?.path ?? [];
    return index === undefined ? 'must be a JSON array of budgets' : `budget ${String(index)}${field.length ? ` ${field.join('.')}` : ''}: ${issue?.message}`;
  }
  const names = new Set<string>();
  for (const b of parsed.data) {
    if (names.has(b.name)) return `defines the budget ${b.name} twice`;
    names.add(b.name);
  }
  return parsed.data;
}

/** A budget's counter for one period and one partition (a user, a token, or all). */
export interface BudgetCounterDoc extends Doc {
  /** Millionths of the currency spent by calls that ended. */
  spent: number;
  /** Millionths held by calls admitted and not yet ended. */
  reserved: number;
}

const MICROS = 1_000_000;
const toMicros = (amount: number) => Math.round(amount * MICROS);

/** The UTC period `at` falls in: its id (d2026-11-26, w2026-11-23 for the week from that Monday, m2026-11) and when it ends. */
export function periodOf(period: BudgetDefinition['period'], at: number): { id: string; start: number; end: number } {
  const d = new Date(at);
  const day = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
  if (period === 'day') return { id: `d${new Date(day).toISOString().slice(0, 10)}`, start: day, end: day + 86_400_000 };
  if (period === 'week') {
    const monday = day - ((d.getUTCDay() + 6) % 7) * 86_400_000;
    return { id: `w${new Date(monday).toISOString().slice(0, 10)}`, start: monday, end: monday + 7 * 86_400_000 };
  }
  const start = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  return { id: `m${new Date(start).toISOString().slice(0, 7)}`, start, end: Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) };
}

/** What a call holds of its budgets until it ends; settle it once, whatever the outcome. */
export interface BudgetReservation {
  entries: { pk: string; period: string; micros: number }[];
}

/** A budget as one call sees it: where it stands after the call's reservation. */
export interface BudgetStanding {
  budget: BudgetDefinition;
  /** Millionths left after everything spent and reserved, this call included. */
  remaining: number;
}

/** The `Svc-Budget` header of the budget closest to its limit (the smallest share left). */
function budgetHeader(standings: readonly BudgetStanding[]): Record<string, string> {
  const closest = standings.reduce<BudgetStanding | undefined>((min, s) => (!min || s.remaining / toMicros(s.budget.limit) < min.remaining / toMicros(min.budget.limit) ? s : min), undefined);
  if (!closest) return {};
  const name = closest.budget.name.replace(/[^\x20-\x7e]/g, '?').replace(/["\\]/g, (c) => `\\${c}`);
  return { [BUDGET_HEADER]: `"${name}";remaining=${(Math.max(0, closest.remaining) / MICROS).toFixed(6).replace(/\.?0+$/, '') || '0'}` };
}

function exceeded(b: BudgetDefinition, headers: Record<string, string>): DomainError {
  return new DomainError('rate-limited', 'BudgetExceeded', `Budget ${b.name} (${b.limit} ${b.currency} a ${b.period}) would be exceeded by this call`, [], {
    'retry-after': String(Math.max(1, Math.ceil((periodOf(b.period, Date.now()).end - Date.now()) / 1000))),
    ...headers,
  });
}

/** Output tokens a call may take when neither the request nor the model sets a limit. */
export const DEFAULT_OUTPUT_LIMIT = 4096;

/** The output limit of a call's request fields. */
export const outputLimit = (parameters: Record<string, unknown>) => Number(parameters.max_tokens ?? parameters.max_completion_tokens) || DEFAULT_OUTPUT_LIMIT;

/** The largest cost a model call can have: its prompt's tokens and its output limit, at the model's prices. */
export function largestCost(messages: readonly ChatMessage[], outputLimit: number, prices: { input: number; output: number }): number {
  let tokens = 0;
  for (const m of messages) {
    const text = typeof m.content === 'string' ? m.content : m.content.map((p) => (p.type === 'text' ? p.text : '')).join('');
    // A few tokens of framing per message, as the chat format adds them.
    tokens += encode(text).length + 4;
  }
  return tokens * prices.input + outputLimit * prices.output;
}

export class Budgets {
  private parsed: { raw: string | undefined; definitions: BudgetDefinition[] } = { raw: undefined, definitions: [] };

  constructor(
    private readonly settings: AppSettings,
    private readonly counters: Container<BudgetCounterDoc>,
    private readonly log: Log,
  ) {}

  async definitions(): Promise<BudgetDefinition[]> {
    const raw = await this.settings.get(BUDGET_SETTING);
    if (raw === this.parsed.raw) return this.parsed.definitions;
    let definitions: BudgetDefinition[] = [];
    if (raw !== undefined) {
      const parsed = parseBudgets(raw);
      if (typeof parsed === 'string') this.log.warn(`Ignoring invalid ${BUDGET_SETTING}`, { error: parsed });
      else definitions = parsed;
    }
    this.parsed = { raw, definitions };
    return definitions;
  }

  /**
   * The budgets a call of this principal to this agent counts against, with their counters' partitions.
   * A cost in a named currency counts against budgets in that currency; a cost without one (a model priced
   * per 1,000 tokens) against every budget.
   */
  async applying(principal: Principal, agent: Pick<AgentDoc, 'name' | 'cost_center'>, currency: string | null): Promise<{ budget: BudgetDefinition; pk: string }[]> {
    const out: { budget: BudgetDefinition; pk: string }[] = [];
    for (const budget of await this.definitions()) {
      if (currency !== null && budget.currency !== currency) continue;
      if (budget.agent_name !== undefined && resourceId(budget.agent_name) !== resourceId(agent.name)) continue;
      let who = '*';
      if (budget.scope === 'cost_center' && budget.cost_center !== agent.cost_center) continue;
      if (budget.scope === 'user') {
        if (principal.kind !== 'user') continue;
        who = principal.id;
      }
      if (budget.scope === 'access_token') {
        if (principal.kind !== 'agent-token') continue;
        who = principal.id;
      }
      out.push({ budget, pk: `budget|${budget.name}|${who}` });
    }
    return out;
  }

  /** Refuses a call whose budgets are already spent (at admission: before a queued or streamed call starts); else its Svc-Budget header. */
  async check(principal: Principal, agent: Pick<AgentDoc, 'name' | 'cost_center'>): Promise<Record<string, string>> {
    const applying = await this.applying(principal, agent, null);
    if (applying.length === 0) return {};
    const now = Date.now();
    const standings = await Promise.all(
      applying.map(async ({ budget, pk }) => {
        const doc = await this.counters.read(pk, periodOf(budget.period, now).id);
        return { budget, remaining: toMicros(budget.limit) - (doc?.spent ?? 0) - (doc?.reserved ?? 0) };
      }),
    );
    const headers = budgetHeader(standings);
    const spent = standings.find((st) => st.remaining <= 0);
    if (spent) throw exceeded(spent.budget, headers);
    return headers;
  }

  /**
   * Reserves `amount` in every budget that applies; when one would go past its limit, gives everything back
   * and throws 429 BudgetExceeded naming it. The reservation and the Svc-Budget header of the closest budget.
   */
  async reserve(principal: Principal, agent: Pick<AgentDoc, 'name' | 'cost_center'>, amount: () => number, currency: string | null): Promise<{ reservation: BudgetReservation; headers: Record<string, string> }> {
    const reservation: BudgetReservation = { entries: [] };
    const applying = await this.applying(principal, agent, currency);
    if (applying.length === 0) return { reservation, headers: {} };
    // Counted only when a budget applies: the tokenizer is the costly part.
    const micros = Math.max(0, toMicros(amount()));
    const now = Date.now();
    const standings = await Promise.all(
      applying.map(async ({ budget, pk }): Promise<BudgetStanding> => {
        const period = periodOf(budget.period, now);
        const after = await this.increment(pk, period.id, Math.ceil((period.end - now) / 1000) + 86_400, micros);
        reservation.entries.push({ pk, period: period.id, micros });
        return { budget, remaining: toMicros(budget.limit) - after.spent - after.reserved };
      }),
    );
    const headers = budgetHeader(standings);
    const over = standings.find((st) => st.remaining < 0);
    if (over) {
      await this.settle(reservation, 0);
      throw exceeded(over.budget, headers);
    }
    return { reservation, headers };
  }

  /** Replaces a call's reservation with what it cost (0 when it failed before spending). */
  async settle(reservation: BudgetReservation, cost: number): Promise<void> {
    const spent = Math.max(0, toMicros(cost));
    const entries = reservation.entries.splice(0);
    await Promise.all(
      entries.map(({ pk, period, micros }) =>
        this.counters.patch(pk, period, [{ op: 'incr', path: 'reserved', value: -micros }, ...(spent > 0 ? [{ op: 'incr' as const, path: 'spent', value: spent }] : [])]).catch((e: unknown) => {
          if (!(e instanceof NotFoundError)) throw e;
        }),
      ),
    );
  }

  /** Where every budget stands in its current period (budget status analytics): spent, reserved and left, per partition. */
  async status(): Promise<{ budget: BudgetDefinition; period: string; partitions: { partition: string; spent: number; reserved: number }[] }[]> {
    const now = Date.now();
    return Promise.all(
      (await this.definitions()).map(async (budget) => {
        const period = periodOf(budget.period, now);
        const prefix = `budget|${budget.name}|`;
        const { items } = await this.counters.query({ where: [{ field: 'id', op: 'eq', value: period.id }, { field: 'pk', op: 'startsWith', value: prefix }] });
        return { budget, period: period.id, partitions: items.map((d) => ({ partition: d.pk.slice(prefix.length), spent: d.spent / MICROS, reserved: d.reserved / MICROS })) };
      }),
    );
  }

  /** Atomically adds `micros` to a counter's reservation, creating the counter on first use. */
  private async increment(pk: string, id: string, ttl: number, micros: number): Promise<BudgetCounterDoc> {
    const ops: PatchOp[] = [{ op: 'incr', path: 'reserved', value: micros }];
    for (;;) {
      try {
        return await this.counters.patch(pk, id, ops);
      } catch (e) {
        if (!(e instanceof NotFoundError)) throw e;
      }
      try {
        return await this.counters.create({ id, pk, ttl, spent: 0, reserved: micros });
      } catch (e) {
        if (!(e instanceof ConflictError)) throw e;
      }
    }
  }
}
