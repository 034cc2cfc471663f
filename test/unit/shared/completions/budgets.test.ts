// Budget periods (UTC day, ISO week from Monday, month), the definitions a setting may hold, and the
// largest cost of a call.
import { describe, expect, it } from 'vitest';
import { largestCost, outputLimit, parseBudgets, periodOf } from '../../../../shared/completions/budgets.js';

describe('budgets', () => {
  it('puts a time in its UTC day, week (from Monday) and month', () => {
    const at = Date.parse('2026-11-29T23:59:59.999Z'); // a Sunday
    expect(periodOf('day', at)).toMatchObject({ id: 'd2026-11-29', end: Date.parse('2026-11-30T00:00:00Z') });
    expect(periodOf('week', at)).toMatchObject({ id: 'w2026-11-23', start: Date.parse('2026-11-23T00:00:00Z'), end: Date.parse('2026-11-30T00:00:00Z') });
    expect(periodOf('week', Date.parse('2026-11-30T00:00:00Z')).id).toBe('w2026-11-30');
    expect(periodOf('month', at)).toMatchObject({ id: 'm2026-11', end: Date.parse('2026-12-01T00:00:00Z') });
    expect(periodOf('month', Date.parse('2026-12-31T12:00:00Z')).end).toBe(Date.parse('2027-01-01T00:00:00Z'));
  });

  it('takes a list of well-formed budgets with different names', () => {
    const ok = parseBudgets(JSON.stringify([{ name: 'a', scope: 'user', agent_name: 'x', limit: 5, currency: 'USD', period: 'week' }]));
    expect(ok).toEqual([{ name: 'a', scope: 'user', agent_name: 'x', limit: 5, currency: 'USD', period: 'week' }]);
    expect(parseBudgets('{')).toMatch(/JSON array/);
    expect(parseBudgets(JSON.stringify([{ name: 'a', scope: 'user', limit: 5, currency: 'USD', period: 'year' }]))).toMatch(/budget 0 period/);
    expect(parseBudgets(JSON.stringify([{ name: 'a', scope: 'instance', limit: 5, currency: 'USD', period: 'day', extra: 1 }]))).toMatch(/budget 0/);
  });

  it("costs a call's prompt tokens and its output limit at the model's prices", () => {
    const prices = { input: 1, output: 2 };
    const cost = largestCost([{ role: 'system', content: 'You are kind.' }, { role: 'user', content: 'Hello there' }], 10, prices);
    // 4 + 2 tokens of text, 4 of framing per message, 10 output tokens at 2.
    expect(cost).toBe(4 + 2 + 8 + 20);
    expect(outputLimit({ max_tokens: 7 })).toBe(7);
    expect(outputLimit({})).toBe(4096);
  });
});
