// How a model upstream can fail, as the client is told: kind, stable code, a message that says nothing about
// the network behind the endpoint, and whether trying again could help.
import { DomainError, type ErrorKind } from '../errors.js';

/**
 * Whether another try within the call could help (`retryable`, after `retryAfterMs` when the upstream said),
 * and whether no later try could (`permanent`: the same request gets the same answer).
 */
export interface Retry {
  retryable: boolean;
  retryAfterMs?: number | undefined;
  permanent?: boolean;
}

/** An upstream failure: what the client is told, and whether trying again could help. */
export class UpstreamError extends DomainError {
  readonly retryable: boolean;
  readonly retryAfterMs: number | undefined;
  readonly permanent: boolean;
  constructor(kind: ErrorKind, code: string, message: string, options: Retry) {
    const { retryAfterMs } = options;
    super(kind, code, message, {
      headers:
        retryAfterMs !== undefined
          ? { 'retry-after': String(Math.min(3600, Math.max(1, Math.ceil(retryAfterMs / 1000)))) }
          : {},
    });
    this.retryable = options.retryable;
    this.retryAfterMs = retryAfterMs;
    this.permanent = options.permanent ?? false;
  }
}

/** The caller gave up (a cancelled operation, a client that went away, shutdown). */
export class CallCancelledError extends Error {
  override name = 'CallCancelledError';
}

export const unreachable = () =>
  new UpstreamError('upstream-failed', 'UpstreamUnavailable', 'The model endpoint could not be reached', {
    retryable: true,
  });
export const timedOut = (seconds: number) =>
  new UpstreamError('upstream-timeout', 'UpstreamTimeout', `The model did not answer within ${seconds} s`, {
    retryable: false,
  });
export const tooLarge = (limit: number) =>
  new UpstreamError('upstream-failed', 'UpstreamResponseTooLarge', `The model's answer is larger than ${limit} bytes`, {
    retryable: false,
    permanent: true,
  });
export const invalid = (why: string) =>
  new UpstreamError('upstream-failed', 'UpstreamInvalidResponse', `The model endpoint gave an invalid answer: ${why}`, {
    retryable: true,
  });

export function statusError(status: number, retryAfterMs: number | undefined): UpstreamError {
  if (status === 429)
    return new UpstreamError('unavailable', 'UpstreamRateLimited', 'The model is rate limited; try again later', {
      retryable: true,
      retryAfterMs,
    });
  if (status >= 500 || status === 408)
    return new UpstreamError('upstream-failed', 'UpstreamError', `The model endpoint failed (${status})`, {
      retryable: true,
      retryAfterMs,
    });
  // Other 4xx answers are deterministic: the same request would be refused again.
  return new UpstreamError(
    'upstream-failed',
    'UpstreamRejected',
    `The model endpoint rejected the request (${status})`,
    { retryable: false, permanent: true },
  );
}

/** Retry-After in milliseconds (delta-seconds or an HTTP date), or undefined. */
export function retryAfterMs(header: string | string[] | undefined, now = Date.now()): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined || value.trim() === '') return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
