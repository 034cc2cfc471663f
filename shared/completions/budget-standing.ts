// Where budgets stand: the Svc-Budget header of the one closest to its limit, the 429 BudgetExceeded a call is
// refused with, and a budget's report for its current period from its counters.
import { DomainError } from '../errors.js';
import type { Container } from '../store/types.js';
import {
  counterKey,
  MICROS,
  periodOf,
  toMicros,
  type BudgetCounterDoc,
  type BudgetDefinition,
} from './budget-definitions.js';

export const BUDGET_HEADER = 'svc-budget';

/** A budget as one call sees it: where it stands after the call's reservation. */
export interface BudgetStanding {
  budget: BudgetDefinition;
  /** Millionths left after everything spent and reserved, this call included. */
  remaining: number;
}

/** The `Svc-Budget` header of the budget closest to its limit (the smallest share left). */
export function budgetHeader(standings: readonly BudgetStanding[]): Record<string, string> {
  const closest = standings.reduce<BudgetStanding | undefined>(
    (min, s) => (!min || s.remaining / toMicros(s.budget.limit) < min.remaining / toMicros(min.budget.limit) ? s : min),
    undefined,
  );
  if (!closest) return {};
  const name = closest.budget.name.replace(/[^\x20-\x7e]/g, '?').replace(/["\\]/g, (c) => `\\${c}`);
  const remaining = (Math.max(0, closest.remaining) / MICROS).toFixed(6).replace(/\.?0+$/, '') || '0';
  return { [BUDGET_HEADER]: `"${name}";remaining=${remaining}` };
}

/** 429 BudgetExceeded naming the budget, retried when its period ends, with the Svc-Budget header. */
export function exceeded(b: BudgetDefinition, headers: Record<string, string>): DomainError {
  return new DomainError(
    'rate-limited',
    'BudgetExceeded',
    `Budget ${b.name} (${b.limit} ${b.currency} a ${b.period}) would be exceeded by this call`,
    {
      headers: {
        'retry-after': String(Math.max(1, Math.ceil((periodOf(b.period, Date.now()).end - Date.now()) / 1000))),
        ...headers,
      },
    },
  );
}

/** Where a budget stands in a period: for the whole scope, or for each user or token. */
export interface BudgetReport {
  period: { start: number; end: number };
  subjects: { subject: string | null; spent: number; reserved: number; remaining: number }[];
}

/**
 * Where a budget stands in its current period, from its counters: the whole scope's, or each user's or
 * token's. `reserved` includes the shares instances hold (given back within a second when idle).
 */
export async function budgetReport(
  counters: Container<BudgetCounterDoc>,
  budget: BudgetDefinition,
  now: number,
): Promise<BudgetReport> {
  const period = periodOf(budget.period, now);
  const perSubject = budget.scope === 'user' || budget.scope === 'access_token';
  const found = perSubject
    ? (
        await counters.query({
          where: [
            { field: 'pk', op: 'startsWith', value: counterKey(budget, '') },
            { field: 'id', op: 'eq', value: period.id },
          ],
        })
      ).items
    : [await counters.read(counterKey(budget, '*'), period.id)].filter((c) => c !== undefined);
  const limit = toMicros(budget.limit);
  const subjects = found.map((c) => ({
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
