// Budgets: money an organisation caps per period (UTC day, ISO week, month), from the Svc:Budgets setting.
// Scopes: the instance, an agent, each user, a cost center (agents with that `cost_center`), each access
// token. Before a model call the call's largest possible cost (its prompt's tokens counted with the
// tokenizer, plus its output limit, at the model's prices) is reserved in every budget that applies, with
// atomic increments in the shared store, so two instances hold one budget; a reservation that would take a
// budget past its limit is undone and the call refused (429 BudgetExceeded). After the call the reservation
// is replaced by what it cost. Amounts are kept in millionths of the currency, as integers.
import { ownerKey, type Principal } from '../auth/principal.js';
import { DomainError } from '../errors.js';
import type { Log } from '../log.js';
import { resourceId } from '../providers/types/resource-type.js';
import type { AppSettings } from '../providers/settings.js';
import type { AgentDoc } from '../providers/types/agent.js';
import { SettingList } from '../providers/setting-list.js';
import type { Container } from '../store/types.js';
import {
  BUDGET_SETTING,
  counterKey,
  parseBudgets,
  periodOf,
  toMicros,
  type Applying,
  type BudgetCounterDoc,
  type BudgetDefinition,
} from './budget-definitions.js';
import { available, BudgetLeases, FLUSH_MS, type Lease } from './budget-leases.js';
import { budgetHeader, budgetReport, exceeded, type BudgetReport, type BudgetStanding } from './budget-standing.js';

/** What a call holds of its budgets until it ends; settle it once, whatever the outcome. */
export interface BudgetReservation {
  entries: { lease: Lease; micros: number }[];
}

/** The agent a call is for, as its budgets see it. */
type BudgetAgent = Pick<AgentDoc, 'name' | 'cost_center'>;

export class Budgets {
  /** This instance's shares, by counter partition and period. */
  private readonly leases: BudgetLeases;
  private readonly flusher: NodeJS.Timeout;
  private readonly list: SettingList<BudgetDefinition>;

  constructor(
    settings: AppSettings,
    private readonly counters: Container<BudgetCounterDoc>,
    log: Log,
  ) {
    this.leases = new BudgetLeases(counters, log);
    this.list = new SettingList({ settings, key: BUDGET_SETTING, parse: parseBudgets, log });
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
    agent: BudgetAgent,
    currency: string | null,
    options: { skipOtherCurrencies?: boolean } = {},
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
        if (options.skipOtherCurrencies === true) continue;
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
    agent: BudgetAgent,
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
        const lease = this.leases.held(pk, period);
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
   * Reserves `amount` (in `currency`) in every budget that applies, from this instance's share when it has room,
   * else by taking a share from the store; when a budget has no room for it, gives everything back and throws 429
   * BudgetExceeded naming it. The reservation and the Svc-Budget header of the closest budget.
   */
  async reserve(
    principal: Principal,
    agent: BudgetAgent,
    { amount, currency }: { amount: () => number | Promise<number>; currency: string | null },
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
      const lease = await this.leases.leaseFor(a, periodOf(budget.period, now), micros);
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
  flush(all = false): Promise<void> {
    return this.leases.flush(all);
  }

  async close(): Promise<void> {
    clearInterval(this.flusher);
    await this.flush(true);
  }

  /**
   * Adds a cost spent without a reservation to every budget that applies: a realtime call's response, whose
   * cost is known only once the model has answered. The call's budgets were checked when it started.
   */
  async charge(
    principal: Principal,
    agent: BudgetAgent,
    { currency, cost }: { currency: string | null; cost: number },
  ): Promise<void> {
    const micros = toMicros(cost);
    if (micros <= 0) return;
    const now = Date.now();
    const applying = await this.applying(principal, agent, currency, { skipOtherCurrencies: true });
    await Promise.all(
      applying.map((a) => this.leases.increment(a, { period: periodOf(a.budget.period, now), field: 'spent', micros })),
    );
  }

  /**
   * Where a budget stands in its current period, from its counters: the whole scope's, or each user's or
   * token's. `reserved` includes the shares instances hold (given back within a second when idle).
   */
  standing(budget: BudgetDefinition, now = Date.now()): Promise<BudgetReport> {
    return budgetReport(this.counters, budget, now);
  }
}
