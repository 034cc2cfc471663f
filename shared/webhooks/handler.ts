// The queue handler that delivers webhooks: one attempt per message; a failed attempt queues the next one
// with its delay (the queue's visibility delay), until one is accepted or the schedule is over. Every attempt
// is recorded on the operation. Each user whose operations are reported has a share of a few deliveries at
// once (shares.ts), so receivers that hang (up to the attempt deadline) delay only their own user's
// deliveries, wherever they are.
import { randomUUID } from 'node:crypto';
import { operations, presentOperation } from '../completions/operations.js';
import { readSecret, SECRET_NAME } from '../config.js';
import { APP_CONFIG_PK } from '../providers/settings.js';
import { appConfigurations } from '../providers/types/catalog.js';
import { resourceId, resourcesOf } from '../providers/types/resource-type.js';
import type { QueueDelivery } from '../queues/producer.js';
import { Shares } from '../queues/shares.js';
import { ownerKey } from '../auth/principal.js';
import type { WebhookMessage } from '../queues/messages.js';
import type { z } from 'zod';
import { ConflictError } from '../store/types.js';
import { updateDocument } from '../store/update.js';
import { newSigningSecret, post, retryDelaySeconds, SIGNING_SECRET_SETTING } from './deliveries.js';
import type { Quotas } from '../completions/quotas.js';
import type { Config } from '../config.js';
import type { Log } from '../log.js';
import type { Dispatcher } from '../net/undici.js';
import type { Producer } from '../queues/producer.js';
import type { DocumentStore } from '../store/types.js';

/** What this module uses of the service (the hosts pass the whole of it). */
export interface WebhooksHandlerDeps {
  readonly config: Config;
  readonly log: Log;
  readonly producer: Producer;
  readonly quotas: Quotas;
  readonly store: DocumentStore;
  readonly userDispatcher: Dispatcher;
}

const resolve = (value: string) => (SECRET_NAME.test(value) ? readSecret(value) : value);

/**
 * The signing secrets, current first: the setting's value, or the secret it names (an SVC_SECRET_ app setting,
 * a Key Vault reference in Azure), and for a day after a change the value it replaced. One is generated and
 * stored when none is configured (a warning says so), so webhooks work out of the box; receivers that verify
 * signatures need one set by the operator, since the setting is never shown.
 */
async function signingSecrets(s: WebhooksHandlerDeps): Promise<string[]> {
  const settings = resourcesOf(s.store, appConfigurations);
  const id = resourceId(SIGNING_SECRET_SETTING);
  let doc = await settings.read(APP_CONFIG_PK, id);
  if (!doc || doc.deleted) {
    const now = new Date().toISOString();
    const name = SIGNING_SECRET_SETTING;
    try {
      doc = await settings.create({
        id,
        pk: APP_CONFIG_PK,
        type: appConfigurations.type,
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
      });
      s.log.warn(`No ${name} was configured: one was generated; set your own to verify deliveries`);
    } catch (e) {
      if (!(e instanceof ConflictError)) throw e;
      doc = await settings.read(APP_CONFIG_PK, id);
    }
  }
  if (!doc) return [];
  const previous =
    doc.previous_value !== undefined && doc.previous_until !== undefined && Date.parse(doc.previous_until) > Date.now()
      ? [doc.previous_value]
      : [];
  return [doc.value, ...previous].map(resolve).filter((v): v is string => typeof v === 'string' && v.length > 0);
}

/** Deliveries in flight per user on this instance: one user's hanging receivers hold only their own share. */
const shares = new Shares(2);

export async function deliverWebhook(
  { key, attempt, waits }: z.output<typeof WebhookMessage>,
  _delivery: QueueDelivery,
  s: WebhooksHandlerDeps,
): Promise<void> {
  const op = await operations(s).read(key, key);
  if (!op?.callback_url) return;
  if (op.status === 'InProgress') {
    // Queued just before the operation's final write (the outbox order): look again shortly, a few times.
    // An operation that stays in progress queues its delivery again when it ends.
    if (waits < 3)
      await s.producer.send(
        s.config.webhooks.queue,
        { key, attempt, waits: waits + 1, id: randomUUID() } satisfies WebhookMessage,
        { visibilityTimeoutSeconds: 5 },
      );
    return;
  }
  if (op.deliveries?.some((d) => d.outcome === 'delivered')) return;
  const leave = shares.enter(ownerKey(op.principal.upn));
  if (!leave) {
    // Its user's share is taken by deliveries in flight: the same attempt, a little later.
    await s.producer.send(s.config.webhooks.queue, { key, attempt, id: randomUUID() } satisfies WebhookMessage, {
      visibilityTimeoutSeconds: 2,
    });
    return;
  }
  let result;
  try {
    const body = JSON.stringify(presentOperation({ ...op, deliveries: undefined, callback_url: undefined }));
    const secrets = await signingSecrets(s);
    result =
      secrets.length > 0
        ? await post(
            { url: op.callback_url, body, secrets },
            {
              dispatcher: s.userDispatcher,
              rules: { policy: 'user', allowPrivateNetwork: s.config.allowPrivateNetwork },
            },
          )
        : {
            outcome: 'refused' as const,
            error: `the secret that ${SIGNING_SECRET_SETTING} names is not set`,
            duration_ms: 0,
          };
  } finally {
    leave();
  }
  await updateDocument(operations(s), { pk: key, id: key }, (current) =>
    current
      ? {
          ...current,
          deliveries: [...(current.deliveries ?? []), { attempt, at: new Date().toISOString(), ...result }].slice(-20),
        }
      : undefined,
  );
  if (result.outcome !== 'failed') return;
  const delay = retryDelaySeconds(attempt + 1, s.config.webhooks.retryBaseSeconds);
  if (delay === undefined) {
    s.log.warn('Webhook delivery given up', { operation: op.operation_id, attempts: attempt });
    return;
  }
  await s.producer.send(
    s.config.webhooks.queue,
    { key, attempt: attempt + 1, id: randomUUID() } satisfies WebhookMessage,
    { visibilityTimeoutSeconds: delay },
  );
}
