// Webhooks of ended async operations (README "Webhooks"): the operation JSON POSTed to the starter's
// callback_url, signed `Svc-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">` with the secret
// setting Svc:Webhooks:SigningSecret (a second `v1=` with the replaced secret for a day after a change), over
// connections that follow the outbound rules for user URLs, with a short deadline per attempt, at most a few
// at once per destination, retried with growing delays for more than ten minutes (default base 5 s).
import { createHmac, randomBytes } from 'node:crypto';
import { request, type Dispatcher } from '../net/undici.js';
import { urlProblem, type OutboundRules } from '../net/outbound.js';

/** One delivery attempt, as the operation records it. */
export interface DeliveryAttempt {
  attempt: number;
  at: string;
  outcome: 'delivered' | 'failed' | 'refused';
  status_code?: number;
  error?: string;
  duration_ms: number;
}

export { SIGNING_SECRET_SETTING } from '../providers/settings.js';

/** Deadline of one delivery attempt, from connecting to the receiver's answer. */
export const ATTEMPT_TIMEOUT_MS = 5_000;

/** Delays before each retry, in units of WEBHOOK_RETRY_BASE_SECONDS: 5 s, 15 s, ... 16 min with the default. */
const RETRY_STEPS = [1, 3, 6, 12, 24, 48, 96, 192];

/** The delay before retry `attempt` (the first retry is attempt 2), or undefined when the schedule is over. */
export const retryDelaySeconds = (attempt: number, base: number): number | undefined => {
  const step = RETRY_STEPS[attempt - 2];
  return step === undefined ? undefined : step * base;
};

/** The signature header of a body sent at unix second `t`: one `v1=` per valid secret, the current one first. */
export const signature = (secrets: readonly string[], body: string, t: number) =>
  [
    `t=${t}`,
    ...secrets.map((secret) => `v1=${createHmac('sha256', secret).update(`${t}.${body}`).digest('hex')}`),
  ].join(',');

/** A new signing secret, for when none is configured (operators read it from the app configuration). */
export const newSigningSecret = () => randomBytes(32).toString('base64url');

/** A delivery: the receiver's URL, the body, and the secrets that sign it (the current one first). */
export interface Delivery {
  url: string;
  body: string;
  secrets: readonly string[];
}

/** How deliveries connect: the pool of user URLs, and the outbound rules the URL must meet. */
export interface DeliveryRoute {
  dispatcher: Dispatcher;
  rules: OutboundRules;
}

/** A property of a thrown value (own or inherited, enumerable or not), when it is an object that has it. */
const fieldOf = (value: unknown, name: 'code' | 'cause'): unknown =>
  typeof value === 'object' && value !== null && name in value ? Reflect.get(value, name) : undefined;

/** POSTs a signed body; resolves with what happened, never throws. */
export async function post(
  { url, body, secrets }: Delivery,
  { dispatcher, rules }: DeliveryRoute,
): Promise<Omit<DeliveryAttempt, 'attempt' | 'at'>> {
  const started = Date.now();
  const took = () => Date.now() - started;
  const problem = urlProblem(url, rules);
  if (problem) return { outcome: 'refused', error: `callback_url ${problem}`, duration_ms: 0 };
  try {
    const t = Math.floor(Date.now() / 1000);
    const response = await request(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'user-agent': 'agent-platform-webhooks',
        'svc-signature': signature(secrets, body, t),
      },
      body,
      dispatcher,
      headersTimeout: ATTEMPT_TIMEOUT_MS,
      bodyTimeout: ATTEMPT_TIMEOUT_MS,
      signal: AbortSignal.timeout(ATTEMPT_TIMEOUT_MS),
    });
    // The receiver's answer is not read beyond what frees the connection.
    await response.body.dump({ limit: 16 * 1024 }).catch(() => undefined);
    const ok = response.statusCode >= 200 && response.statusCode < 300;
    return { outcome: ok ? 'delivered' : 'failed', status_code: response.statusCode, duration_ms: took() };
  } catch (e) {
    const blocked = fieldOf(e, 'code') === 'EBLOCKED' || fieldOf(fieldOf(e, 'cause'), 'code') === 'EBLOCKED';
    return blocked
      ? { outcome: 'refused', error: 'callback_url is not an allowed destination', duration_ms: took() }
      : { outcome: 'failed', error: 'the receiver could not be reached', duration_ms: took() };
  }
}
