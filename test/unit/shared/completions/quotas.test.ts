// Quotas hold across instances: two Quotas objects (two Functions instances) share one store.
import { describe, expect, it } from 'vitest';
import type { Principal } from '../../../../shared/auth/principal.js';
import { QUOTA_SETTING, Quotas } from '../../../../shared/completions/quotas.js';
import { ApiError } from '../../../../shared/http/errors.js';
import { APP_CONFIG_PK, AppSettings, type AppConfigDoc } from '../../../../shared/providers/settings.js';
import { resourceId } from '../../../../shared/providers/resource-type.js';
import { openSqliteStore } from '../../../../shared/store/sqlite-store.js';
import { memoryLog } from '../../../support/services.js';

const alice: Principal = { kind: 'user', id: 'a-1', upn: 'alice@example.com', name: 'Alice', userName: null, groups: [], scopes: [], appRoles: [] };
const bob: Principal = { ...alice, id: 'b-1', upn: 'bob@example.com' };

describe('quotas', () => {
  it('counts in the shared store, so the limit holds across instances', async () => {
    const store = openSqliteStore(':memory:');
    await store.container<AppConfigDoc>('resources').create({
      id: resourceId(QUOTA_SETTING),
      pk: APP_CONFIG_PK,
      key: QUOTA_SETTING,
      value: JSON.stringify([{ name: 'PerUser', context: 'CoreAPI:Completions', metric_partition: 'UserIdentifier', metric_limit: 3, metric_window_seconds: 60, lockout_duration_seconds: 0 }]),
    });
    const instance = () => new Quotas(new AppSettings(store.container('resources')), store.container('quotas'), memoryLog());
    const [one, two] = [instance(), instance()];
    await one.enforce(alice, 'any');
    await two.enforce(alice, 'any');
    await one.enforce(alice, 'any');
    const denied = await two.enforce(alice, 'any').catch((e: unknown) => e);
    expect(denied).toBeInstanceOf(ApiError);
    expect((denied as ApiError).status).toBe(429);
    expect((denied as ApiError).body).toMatchObject({ quota_exceeded: true, quota_name: 'PerUser' });
    expect(Number((denied as ApiError).headers['retry-after'])).toBeGreaterThan(0);
    await expect(one.enforce(bob, 'any')).resolves.toBeUndefined();
  });

  it('ignores an invalid definitions setting instead of failing every request, and says so', async () => {
    const store = openSqliteStore(':memory:');
    await store.container<AppConfigDoc>('resources').create({ id: resourceId(QUOTA_SETTING), pk: APP_CONFIG_PK, key: QUOTA_SETTING, value: '{not json' });
    const log = memoryLog();
    const quotas = new Quotas(new AppSettings(store.container('resources')), store.container('quotas'), log);
    await expect(quotas.enforce(alice, 'any')).resolves.toBeUndefined();
    expect(log.records.some((r) => r.message.includes('Ignoring invalid'))).toBe(true);
  });
});
