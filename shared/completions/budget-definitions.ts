// What a budget is: its definition in the Svc:Budgets setting (a limit in a currency, per UTC day, ISO week or
// month, over a scope), its periods, and its counters in the quotas container (one per period and partition).
// Amounts are kept in millionths of the currency, as integers.
import { z } from 'zod';
import { parseNamedList } from '../providers/setting-list.js';
import type { Doc, DocsOf } from '../store/types.js';

export const BUDGET_SETTING = 'Svc:Budgets';

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

/** A budget that applies to a call, with the counter partition the call counts in. */
export interface Applying {
  budget: BudgetDefinition;
  /** The counter's partition. */
  pk: string;
  /** A user's UPN or a token's id for budgets per user or token. */
  subject: string | undefined;
}

/** A budget's counter partition: the whole scope (`*`), or one user's or token's (its id). */
export const counterKey = (budget: BudgetDefinition, who: string) => `budget|${budget.name}|${who}`;

export const MICROS = 1_000_000;
export const toMicros = (amount: number) => Math.round(amount * MICROS);

/** A UTC period: its id (d2026-11-26, w2026-11-23 for the week from that Monday, m2026-11), start and end. */
export interface Period {
  id: string;
  start: number;
  end: number;
}

/** The UTC period `at` falls in: its id and when it starts and ends. */
export function periodOf(period: BudgetDefinition['period'], at: number): Period {
  // The same for a whole UTC day: computed once a day per kind of period (every call asks).
  const day = Math.floor(at / 86_400_000);
  const known = lastPeriods[period];
  if (known?.day === day) return known.value;
  const value = computePeriod(period, at);
  lastPeriods[period] = { day, value };
  return value;
}

const lastPeriods: Partial<Record<BudgetDefinition['period'], { day: number; value: Period }>> = {};

function computePeriod(period: BudgetDefinition['period'], at: number): Period {
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
