// Quotas hold across instances: two Quotas objects (two Functions instances) share one store.
import { describe, expect, it } from 'vitest';
import type { Principal } from '../../../../shared/auth/principal.js';
import { isQuotaCounter, QUOTA_SETTING, Quotas } from '../../../../shared/completions/quotas.js';
import { DomainError } from '../../../../shared/errors.js';
import { APP_CONFIG_PK, AppSettings } from '../../../../shared/providers/settings.js';
import { resourceId } from '../../../../shared/providers/types/resource-type.js';
import { openSqliteStore } from '../../../../shared/store/sqlite-store.js';
import { memoryLog } from '../../../support/services.js';
import { rawContainer } from '../../../support/raw-container.js';
import { narrowed } from '../../../../shared/store/narrowed.js';
import type { SettingDoc } from '../../../../shared/providers/settings.js';

const alice: Principal = {
  kind: 'user',
  id: 'a-1',
  upn: 'alice@example.com',
  name: 'Alice',
  userName: null,
  groups: [],
  scopes: [],
  appRoles: [],
};
const bob: Principal = { ...alice, id: 'b-1', upn: 'bob@example.com' };

async function quotasWith(definitions: unknown[]) {
  const store = openSqliteStore(':memory:');
  await rawContainer<SettingDoc>(store, 'resources').create({
    id: resourceId(QUOTA_SETTING),
    pk: APP_CONFIG_PK,
    key: QUOTA_SETTING,
    value: JSON.stringify(definitions),
  });
  return new Quotas(
    new AppSettings(rawContainer<SettingDoc>(store, 'resources')),
    narrowed(store.container('quotas'), isQuotaCounter),
    memoryLog(),
  );
}
const quota = (name: string, limit: number, extra: Record<string, unknown> = {}) => ({
  name,
  context: 'CoreAPI:Completions',
  metric_partition: 'UserPrincipalName',
  metric_limit: limit,
  metric_window_seconds: 60,
  ...extra,
});
/** One call admitted and ended at once: its reservation given back, its headers answered. */
const call = async (quotas: Quotas, who: Principal, agent: string) => {
  const { headers, reservation } = await quotas.enforce(who, agent);
  await quotas.release(reservation);
  return headers;
};
const refusal = (p: Promise<unknown>) =>
  p.then(
    () => expect.fail('not refused'),
    (e: unknown) => e as DomainError,
  );

describe('quotas', () => {
  it('answers the IETF rate-limit headers of the quota closest to its limit, counting this request', async () => {
    const quotas = await quotasWith([
      quota('Wide', 100),
      quota('Narrow', 5),
      quota('OtherAgent', 1, { context: 'CoreAPI:Completions:other' }),
    ]);
    const headers = await call(quotas, alice, 'helper');
    expect(headers['ratelimit-policy']).toBe('"Narrow";q=5;w=60');
    expect(headers.ratelimit).toMatch(/^"Narrow";r=4;t=([1-9]|[1-5]\d|60)$/);
    // No quota applies: no headers.
    expect(
      await call(await quotasWith([quota('OtherAgent', 1, { context: 'CoreAPI:Completions:other' })]), alice, 'helper'),
    ).toEqual({});
  });

  it('puts the exceeded quota on a 429, with r=0 and Retry-After', async () => {
    const quotas = await quotasWith([quota('Wide', 100), quota('One', 1)]);
    await call(quotas, alice, 'helper');
    const e = await refusal(quotas.enforce(alice, 'helper'));
    expect(e.kind).toBe('rate-limited');
    expect(e.headers['ratelimit-policy']).toBe('"One";q=1;w=60');
    expect(e.headers.ratelimit).toMatch(/^"One";r=0;t=\d+$/);
    expect(Number(e.headers['retry-after'])).toBeGreaterThan(0);
  });

  it('counts the tokens of completed calls for a tokens quota and refuses once the limit is reached', async () => {
    const quotas = await quotasWith([quota('Tokens', 50, { metric: 'tokens' })]);
    expect((await call(quotas, alice, 'helper')).ratelimit).toMatch(/^"Tokens";r=50;/);
    await quotas.recordTokens(alice, 'helper', 30);
    expect((await call(quotas, alice, 'helper')).ratelimit).toMatch(/^"Tokens";r=20;/);
    await quotas.recordTokens(alice, 'helper', 20);
    const e = await refusal(quotas.enforce(alice, 'helper'));
    expect(e.body).toMatchObject({ quota_exceeded: true, quota_name: 'Tokens' });
    expect(e.headers.ratelimit).toMatch(/^"Tokens";r=0;/);
    // Per user: bob has used nothing.
    expect((await call(quotas, bob, 'helper')).ratelimit).toMatch(/^"Tokens";r=50;/);
  });

  it('writes quota names as structured-field strings', async () => {
    const quotas = await quotasWith([quota('say "hi" \\ bye', 3)]);
    expect((await call(quotas, alice, 'x'))['ratelimit-policy']).toBe('"say \\"hi\\" \\\\ bye";q=3;w=60');
  });

  it('counts in the shared store, so the limit holds across instances', async () => {
    const store = openSqliteStore(':memory:');
    await rawContainer<SettingDoc>(store, 'resources').create({
      id: resourceId(QUOTA_SETTING),
      pk: APP_CONFIG_PK,
      key: QUOTA_SETTING,
      value: JSON.stringify([
        {
          name: 'PerUser',
          context: 'CoreAPI:Completions',
          metric_partition: 'UserIdentifier',
          metric_limit: 3,
          metric_window_seconds: 60,
          lockout_duration_seconds: 0,
        },
      ]),
    });
    const instance = () =>
      new Quotas(
        new AppSettings(rawContainer<SettingDoc>(store, 'resources')),
        narrowed(store.container('quotas'), isQuotaCounter),
        memoryLog(),
      );
    const [one, two] = [instance(), instance()];
    await one.enforce(alice, 'any');
    await two.enforce(alice, 'any');
    await one.enforce(alice, 'any');
    const denied = await two.enforce(alice, 'any').catch((e: unknown) => e);
    expect(denied).toBeInstanceOf(DomainError);
    expect((denied as DomainError).kind).toBe('rate-limited');
    expect((denied as DomainError).body).toMatchObject({ quota_exceeded: true, quota_name: 'PerUser' });
    expect(Number((denied as DomainError).headers['retry-after'])).toBeGreaterThan(0);
    await expect(one.enforce(bob, 'any')).resolves.toMatchObject({
      headers: { ratelimit: expect.stringMatching(/^"PerUser";r=2;t=\d+$/) as string },
    });
  });

  it('ignores an invalid definitions setting instead of failing every request, and says so', async () => {
    const store = openSqliteStore(':memory:');
    await rawContainer<SettingDoc>(store, 'resources').create({
      id: resourceId(QUOTA_SETTING),
      pk: APP_CONFIG_PK,
      key: QUOTA_SETTING,
      value: '{not json',
    });
    const log = memoryLog();
    const quotas = new Quotas(
      new AppSettings(rawContainer<SettingDoc>(store, 'resources')),
      narrowed(store.container('quotas'), isQuotaCounter),
      log,
    );
    await expect(quotas.enforce(alice, 'any')).resolves.toEqual({ headers: {}, reservation: { entries: [] } });
    expect(log.records.some((r) => r.message.includes('Ignoring invalid'))).toBe(true);
  });

  it('reserves before admission: 64 calls at once on a 10-token quota admit what it allows plus one', async () => {
    const quotas = await quotasWith([quota('Tokens', 10, { metric: 'tokens' })]);
    const used = { tokens: 0, admitted: 0 };
    // Each call uses 5 tokens: a quota that only read the total would admit all 64 (320 tokens).
    const attempt = async () => {
      const { reservation } = await quotas.enforce(alice, 'helper');
      used.admitted++;
      await new Promise((r) => setTimeout(r, 5));
      used.tokens += 5;
      await quotas.recordTokens(alice, 'helper', 5);
      await quotas.release(reservation);
    };
    for (let round = 0; round < 3; round++) await Promise.allSettled(Array.from({ length: 64 }, attempt));
    expect(used.tokens).toBeLessThanOrEqual(10 + 5);
    expect(used.admitted).toBeGreaterThanOrEqual(2);
    // What a refused or ended call reserved is given back: a new window's budget is whole again for bob.
    await expect(call(quotas, bob, 'helper')).resolves.toMatchObject({
      ratelimit: expect.stringMatching(/^"Tokens";r=10;/) as string,
    });
  });
});
