// Budget periods (UTC day, ISO week from Monday, month), the definitions a setting may hold, the largest
// cost of a call, and the shares two instances take of one budget.
import { describe, expect, it } from 'vitest';
import type { Principal } from '../../../../shared/auth/principal.js';
import { isBudgetCounter, parseBudgets, periodOf } from '../../../../shared/completions/budget-definitions.js';
import { Budgets } from '../../../../shared/completions/budgets.js';
import { largestCost, outputLimit } from '../../../../shared/completions/call-cost.js';
import { createLog } from '../../../../shared/log.js';
import type { AppSettings } from '../../../../shared/providers/settings.js';
import { countingStore as counting } from '../../../../shared/store/counting-store.js';
import { openSqliteStore } from '../../../../shared/store/sqlite-store.js';
import type { DocumentStore } from '../../../../shared/store/types.js';
import { narrowed } from '../../../../shared/store/narrowed.js';

describe('budgets', () => {
  it('puts a time in its UTC day, week (from Monday) and month', () => {
    const at = Date.parse('2026-11-29T23:59:59.999Z'); // a Sunday
    expect(periodOf('day', at)).toMatchObject({ id: 'd2026-11-29', end: Date.parse('2026-11-30T00:00:00Z') });
    expect(periodOf('week', at)).toMatchObject({
      id: 'w2026-11-23',
      start: Date.parse('2026-11-23T00:00:00Z'),
      end: Date.parse('2026-11-30T00:00:00Z'),
    });
    expect(periodOf('week', Date.parse('2026-11-30T00:00:00Z')).id).toBe('w2026-11-30');
    expect(periodOf('month', at)).toMatchObject({ id: 'm2026-11', end: Date.parse('2026-12-01T00:00:00Z') });
    expect(periodOf('month', Date.parse('2026-12-31T12:00:00Z')).end).toBe(Date.parse('2027-01-01T00:00:00Z'));
  });

  it('takes a list of well-formed budgets with different names', () => {
    const ok = parseBudgets(
      JSON.stringify([{ name: 'a', scope: 'user', agent_name: 'x', limit: 5, currency: 'USD', period: 'week' }]),
    );
    expect(ok).toEqual([{ name: 'a', scope: 'user', agent_name: 'x', limit: 5, currency: 'USD', period: 'week' }]);
    expect(parseBudgets('{')).toMatch(/JSON array/);
    expect(
      parseBudgets(JSON.stringify([{ name: 'a', scope: 'user', limit: 5, currency: 'USD', period: 'year' }])),
    ).toMatch(/budget 0 period/);
    expect(
      parseBudgets(
        JSON.stringify([{ name: 'a', scope: 'instance', limit: 5, currency: 'USD', period: 'day', extra: 1 }]),
      ),
    ).toMatch(/budget 0/);
  });

  it("costs a call's prompt tokens and its output limit at the model's prices", async () => {
    const prices = { input: 1, output: 2 };
    const cost = await largestCost(
      [
        { role: 'system', content: 'You are kind.' },
        { role: 'user', content: 'Hello there' },
      ],
      10,
      prices,
    );
    // 4 + 2 tokens of text, 4 of framing per message, 10 output tokens at 2.
    expect(cost).toBe(4 + 2 + 8 + 20);
    expect(outputLimit({ max_tokens: 7 })).toBe(7);
    expect(outputLimit({})).toBe(4096);
  });
});

describe('budget shares of two instances on one store', () => {
  const budgetsOn = (store: DocumentStore, limit: number) => {
    const settings = {
      get: () =>
        Promise.resolve(JSON.stringify([{ name: 'b', scope: 'instance', limit, currency: 'EUR', period: 'day' }])),
    } as unknown as AppSettings;
    return new Budgets(settings, narrowed(store.container('quotas'), isBudgetCounter), createLog({ quiet: true }));
  };
  const user = { kind: 'user', id: 'u', upn: 'u@example.com', name: null } as unknown as Principal;
  const agent = { name: 'a' };

  it('never lets reservations of both pass the limit, and writes what was spent', async () => {
    const store = openSqliteStore(':memory:');
    const [one, two] = [budgetsOn(store, 100), budgetsOn(store, 100)];
    try {
      // 40 calls of 7 each, side by side on both: at most 14 fit in 100.
      const on = (i: number) => (i % 2 ? one : two);
      const outcomes = await Promise.allSettled(
        Array.from({ length: 40 }, (_, i) => on(i).reserve(user, agent, { amount: () => 7, currency: 'EUR' })),
      );
      const held = outcomes.flatMap((o, i) =>
        o.status === 'fulfilled' ? [{ budgets: on(i), reservation: o.value.reservation }] : [],
      );
      expect(held.length).toBeGreaterThan(0);
      expect(held.length * 7).toBeLessThanOrEqual(100);
      expect(
        outcomes
          .filter((o) => o.status === 'rejected')
          .every((o) => (o.reason as { code: string }).code === 'BudgetExceeded'),
      ).toBe(true);
      // Each call spends 5 of its 7.
      for (const h of held) h.budgets.settle(h.reservation, 5);
      await Promise.all([one.close(), two.close()]);
      const counter = (await store.container('quotas').query({})).items[0];
      expect(counter).toMatchObject({ spent: held.length * 5 * 1_000_000, reserved: 0 });
    } finally {
      await store.close();
    }
  });

  it('answers calls from the share it holds without the store, and gives an idle share back', async () => {
    const store = counting(openSqliteStore(':memory:'));
    const budgets = budgetsOn(store, 10_000);
    try {
      await budgets
        .reserve(user, agent, { amount: () => 1, currency: 'EUR' })
        .then(({ reservation }) => budgets.settle(reservation, 1));
      store.reset();
      for (let i = 0; i < 50; i++)
        budgets.settle((await budgets.reserve(user, agent, { amount: () => 1, currency: 'EUR' })).reservation, 1);
      // A hundredth of the limit (100) is held: 50 calls of 1 need no store call.
      expect(store.counts.get('quotas')).toBeUndefined();
      await budgets.close();
      const counter = (await store.container('quotas').query({})).items[0];
      expect(counter).toMatchObject({ spent: 51_000_000, reserved: 0 });
    } finally {
      await store.close();
    }
  });
});
