// The Cosmos SQL the adapter emits, including what the local Cosmos-compatible server cannot run.
import { describe, expect, it } from 'vitest';
import { aggregateSql, selectSql } from '../../../../shared/store/cosmos-sql.js';

describe('Cosmos SQL translation', () => {
  it('parameterizes every value and quotes every field', () => {
    const spec = selectSql({
      partition: 'alice@example.com',
      where: [
        { field: 'type', op: 'eq', value: 'Message' },
        { field: 'value', op: 'in', value: ['a', 'b'] },
        { field: 'meta.tags', op: 'contains', value: "x' OR 1=1" },
        { field: 'deleted', op: 'missing' },
      ],
      orderBy: [{ field: 'created_on', direction: 'desc' }],
    });
    expect(spec.query).toBe(
      'SELECT * FROM c WHERE c["pk"] = @p0 AND c["type"] = @p1 AND ARRAY_CONTAINS(@p2, c["value"]) ' +
        'AND ARRAY_CONTAINS(c["meta"]["tags"], @p3) AND NOT IS_DEFINED(c["deleted"]) ORDER BY c["created_on"] DESC',
    );
    expect(spec.parameters).toEqual([
      { name: '@p0', value: 'alice@example.com' },
      { name: '@p1', value: 'Message' },
      { name: '@p2', value: ['a', 'b'] },
      { name: '@p3', value: "x' OR 1=1" },
    ]);
  });

  it('emits GROUP BY for grouped aggregates and DISTINCT projections for count-distinct', () => {
    const plan = aggregateSql({
      where: [{ field: 'day', op: 'ge', value: '2026-01-01' }],
      groupBy: ['agent_name'],
      aggregates: {
        responses: { fn: 'count' },
        tokens: { fn: 'sum', field: 'tokens' },
        users: { fn: 'countDistinct', field: 'upn' },
      },
    });
    expect(plan.grouped?.query).toBe(
      'SELECT c["agent_name"] AS g0, COUNT(1) AS responses, SUM(c["tokens"]) AS tokens FROM c WHERE c["day"] ' +
        '>= @p0 GROUP BY c["agent_name"]',
    );
    expect(plan.distinct).toEqual([
      {
        alias: 'users',
        spec: {
          query: 'SELECT DISTINCT c["agent_name"] AS g0, c["upn"] AS v FROM c WHERE c["day"] >= @p0',
          parameters: [{ name: '@p0', value: '2026-01-01' }],
        },
      },
    ]);
  });

  it('emits one SELECT VALUE query per ungrouped aggregate', () => {
    const plan = aggregateSql({
      aggregates: {
        n: { fn: 'count' },
        top: { fn: 'max', field: 'timestamp' },
        users: { fn: 'countDistinct', field: 'upn' },
      },
    });
    expect(plan.values.map((v) => v.spec.query)).toEqual([
      'SELECT VALUE COUNT(1) FROM c',
      'SELECT VALUE MAX(c["timestamp"]) FROM c',
    ]);
    expect(plan.distinct[0]?.spec.query).toBe('SELECT DISTINCT VALUE c["upn"] FROM c');
  });
});
