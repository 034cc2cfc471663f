// Property: whatever a client sends to any route (path parameters, query, JSON body), the answer is never a
// 5xx and the process never crashes. Bodies are generated from each route's own field names (so they get
// past the first checks) with arbitrary values, and from arbitrary JSON; parameters are arbitrary strings,
// traversal attempts and broken percent-encodings.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ROUTES } from '../../../functions/groups.js';
import { templateParams, type Route } from '../../../shared/http/route.js';
import { startMockLlm, type MockLlm } from '../../../scripts/mock-llm.js';
import { seedAgent } from '../../support/agents.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { INSTANCE } from '../../support/services.js';

/** Cases per route; the total is printed. */
const RUNS = Number(process.env.FUZZ_RUNS ?? 40);

const odd = [
  '..',
  '.',
  '%2e%2e',
  '%2F',
  '%',
  '%zz',
  '%E0%A4%A',
  '%00',
  '%F0%9F',
  'a'.repeat(300),
  ' ',
  '~',
  'CON',
  'fuzz',
  'FUZZ',
  '*',
];

/** Path segment: the instance id mostly (to get past it), else arbitrary text, encoded or raw and broken. */
const segment = (name: string) =>
  fc.oneof(
    { weight: name === 'instanceId' ? 6 : 1, arbitrary: fc.constant(name === 'instanceId' ? INSTANCE : 'fuzz') },
    { weight: 2, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }).map(encodeURIComponent) },
    { weight: 2, arbitrary: fc.constantFrom(...odd) },
  );

/** The field names a route's body schema knows, so generated bodies reach its deeper checks. */
function fieldsOf(schema: z.ZodType | undefined): string[] {
  let s: unknown = schema;
  for (let i = 0; i < 5 && s instanceof z.ZodType; i++) {
    if (s instanceof z.ZodObject) return Object.keys(s.shape);
    const inner = (s as { _zod?: { def?: { innerType?: unknown; in?: unknown; schema?: unknown } } })._zod?.def;
    s = inner?.innerType ?? inner?.in ?? inner?.schema;
  }
  return [];
}

const value = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.constantFrom(
    '',
    ' ',
    'fuzz',
    INSTANCE,
    `/instances/${INSTANCE}/providers/Svc.Agent/agents/fuzz`,
    -1,
    0,
    1e308,
    true,
    null,
    [],
    {},
  ),
);

const body = (route: Route) => {
  const fields = fieldsOf(route.body);
  const shaped =
    fields.length > 0
      ? fc.dictionary(fc.constantFrom(...fields, 'unexpected'), value, { maxKeys: fields.length + 1 })
      : fc.constant({});
  return fc.oneof({ weight: 3, arbitrary: shaped }, { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 4 }) });
};

const query = (route: Route) => {
  const keys = route.query instanceof z.ZodObject ? Object.keys(route.query.shape) : [];
  return fc.dictionary(
    fc.constantFrom(...keys, 'api-version', 'x'),
    fc.oneof(fc.string({ maxLength: 20 }), fc.constantFrom('2024-02-16', 'true', 'agent', 'user')),
    { maxKeys: 3 },
  );
};

describe('fuzz', () => {
  let app: TestApp;
  let llm: MockLlm;
  let sent = 0;
  const statuses = new Map<number, number>();

  beforeAll(async () => {
    llm = await startMockLlm();
    app = await startTestApp();
    await seedAgent(app, 'fuzz', { llmUrl: llm.url });
  });
  afterAll(async () => {
    await app.close();
    await llm.close();
    const by = [...statuses]
      .sort(([a], [b]) => a - b)
      .map(([status, n]) => `${status}: ${n}`)
      .join(', ');
    process.stdout.write(`fuzz: ${sent} generated requests over ${ROUTES.length} routes, no 5xx (${by})\n`);
  });

  it.each(ROUTES.map((r) => [`${r.method} ${r.path} (${r.api})`, r] as const))(
    '%s never answers 5xx',
    async (_name, route) => {
      const token = await app.token();
      const base = route.api === 'core' ? app.core : app.management;
      const names = templateParams(route.path);
      await fc.assert(
        fc.asyncProperty(fc.tuple(...names.map(segment)), query(route), body(route), async (params, q, b) => {
          let path = route.path;
          names.forEach((n, i) => (path = path.replace(`{${n}}`, params[i] ?? '')));
          const search = new URLSearchParams(q).toString();
          const hasBody = route.method !== 'GET' && route.method !== 'DELETE';
          const res = await fetch(`${base}${path}${search ? `?${search}` : ''}`, {
            method: route.method,
            headers: { authorization: `Bearer ${token}`, ...(hasBody ? { 'content-type': 'application/json' } : {}) },
            ...(hasBody ? { body: JSON.stringify(b) } : {}),
          });
          const text = await res.text();
          sent++;
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          expect(
            res.status,
            `${route.method} ${path}?${search} ${JSON.stringify(b)} -> ${text.slice(0, 300)}`,
          ).toBeLessThan(500);
        }),
        { numRuns: RUNS },
      );
    },
  );
});
