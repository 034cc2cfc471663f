// The queue handler that delivers webhooks: one attempt per message; a failed attempt queues the next one
// with its delay (the queue's visibility delay), until one is accepted or the schedule is over. Every attempt
// is recorded on the operation.
import { randomUUID } from 'node:crypto';
import { operations, presentOperation } from '../completions/operations.js';
import { readSecret, SECRET_NAME } from '../config.js';
import { APP_CONFIG_PK, type AppConfigDoc } from '../providers/settings.js';
import { resourceId } from '../providers/resource-type.js';
import type { QueueDelivery } from '../queues/handler.js';
import type { Services } from '../services.js';
import { ConflictError } from '../store/types.js';
import { updateDocument } from '../store/update.js';
import { newSigningSecret, post, retryDelaySeconds, SIGNING_SECRET_SETTING } from './deliveries.js';

/**
 * The signing secret: the setting's value, or the secret it names (an SVC_SECRET_ app setting, a Key Vault
 * reference in Azure). One is generated and stored when none is configured (and a warning says so), so that
 * webhooks work out of the box; operators who keep it in Key Vault configure the reference instead.
 */
async function signingSecret(s: Services): Promise<string | undefined> {
  const configured = await s.settings.get(SIGNING_SECRET_SETTING);
  if (configured) return SECRET_NAME.test(configured) ? readSecret(configured) : configured;
  const now = new Date().toISOString();
  const name = SIGNING_SECRET_SETTING;
  const doc: AppConfigDoc & Record<string, unknown> = {
    id: resourceId(name),
    pk: APP_CONFIG_PK,
    type: 'app-configuration',
    name,
    key: name,
    value: newSigningSecret(),
    object_id: `/instances/${s.config.instanceId}/providers/Svc.Configuration/appConfigurations/${name}`,
    description: 'Signs webhook deliveries (generated: none was configured)',
    created_on: now,
    created_by: 'system',
    updated_on: now,
    updated_by: 'system',
    deleted: false,
  };
  try {
    await s.store.container<AppConfigDoc>('resources').create(doc);
    s.log.warn(`No ${name} was configured: one was generated; read it from the app configuration to verify deliveries`);
  } catch (e) {
    if (!(e instanceof ConflictError)) throw e;
  }
  s.settings.invalidate(name);
  return (await s.settings.get(name)) ?? doc.value;
}

export async function deliverWebhook(message: unknown, _delivery: QueueDelivery, s: Services): Promise<void> {
  const m = (typeof message === 'object' && message !== null ? message : {}) as { key?: unknown; attempt?: unknown };
  const key = String(m.key);
  const attempt = typeof m.attempt === 'number' && m.attempt >= 1 ? m.attempt : 1;
  const op = await operations(s).read(key, key);
  if (!op?.callback_url || op.status === 'InProgress') return;
  if (op.deliveries?.some((d) => d.outcome === 'delivered')) return;
  const body = JSON.stringify(presentOperation({ ...op, deliveries: undefined, callback_url: undefined }));
  const secret = await signingSecret(s);
  const result = secret
    ? await post(op.callback_url, body, secret, s.userDispatcher, { policy: 'user', allowPrivateNetwork: s.config.allowPrivateNetwork })
    : { outcome: 'refused' as const, error: `the secret that ${SIGNING_SECRET_SETTING} names is not set`, duration_ms: 0 };
  await updateDocument(operations(s), key, key, (current) =>
    current ? { ...current, deliveries: [...(current.deliveries ?? []), { attempt, at: new Date().toISOString(), ...result }].slice(-20) } : undefined,
  );
  if (result.outcome !== 'failed') return;
  const delay = retryDelaySeconds(attempt + 1, s.config.webhooks.retryBaseSeconds);
  if (delay === undefined) {
    s.log.warn('Webhook delivery given up', { operation: op.operation_id, attempts: attempt });
    return;
  }
  await s.producer.send(s.config.webhooks.queue, { key, attempt: attempt + 1, id: randomUUID() }, { visibilityTimeoutSeconds: delay });
}
