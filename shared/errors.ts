// The errors of the domain: what went wrong (a kind) and a stable code clients can match on. Nothing here
// knows HTTP: the edge maps each kind to a status once (http/envelopes.ts), and queue handlers, the memory
// tool server and the async worker read the kind directly.

/**
 * What kind of failure it is, from the caller's side: their input, their identity or rights, the state of
 * what they asked for, a limit, or the service and its upstreams.
 */
export type ErrorKind =
  | 'invalid'
  | 'unauthenticated'
  | 'forbidden'
  | 'not-found'
  | 'method-not-allowed'
  | 'misdirected'
  | 'request-timeout'
  | 'conflict'
  | 'too-large'
  | 'unsupported-media-type'
  | 'headers-too-large'
  | 'rate-limited'
  | 'internal'
  | 'upstream-failed'
  | 'unavailable'
  | 'upstream-timeout';

/** Kinds the caller caused and can fix: trying the same thing again gets the same answer. */
const CALLER_KINDS: ReadonlySet<ErrorKind> = new Set([
  'invalid',
  'unauthenticated',
  'forbidden',
  'not-found',
  'method-not-allowed',
  'misdirected',
  'request-timeout',
  'conflict',
  'too-large',
  'unsupported-media-type',
  'headers-too-large',
]);

/** One failed field of a validation error. */
export interface FieldError {
  field: string;
  message: string;
}

/**
 * What a failure carries besides its message: `details` name the failed fields; `headers` travel with the answer
 * (Retry-After, Allow); `body` replaces the error envelope entirely (the quota refusal is such a body).
 */
export interface DomainErrorExtra {
  details?: readonly FieldError[];
  headers?: Record<string, string>;
  body?: unknown;
}

/** A failure the caller is told about: its kind (which decides the status), a stable code and a message. */
export class DomainError extends Error {
  override name = 'DomainError';
  readonly details: readonly FieldError[];
  readonly headers: Record<string, string>;
  readonly body?: unknown;
  constructor(
    readonly kind: ErrorKind,
    readonly code: string,
    message: string,
    extra: DomainErrorExtra = {},
  ) {
    super(message);
    this.details = extra.details ?? [];
    this.headers = extra.headers ?? {};
    this.body = extra.body;
  }

  /** The caller caused it (bad input, no right, missing resource, a conflict), not the service. */
  get callerFault(): boolean {
    return CALLER_KINDS.has(this.kind);
  }
}

export const badRequest = (message: string, details: readonly FieldError[] = []) =>
  new DomainError('invalid', 'BadRequest', message, { details });
export const validationError = (details: readonly FieldError[]) =>
  new DomainError('invalid', 'ValidationError', details[0]?.message ?? 'Invalid request', { details });
export const unauthorized = (message = 'Authentication required') =>
  new DomainError('unauthenticated', 'Unauthorized', message, { headers: { 'www-authenticate': 'Bearer' } });
export const forbidden = (message = 'Insufficient permissions') => new DomainError('forbidden', 'Forbidden', message);
export const notFound = (message = 'Resource not found') => new DomainError('not-found', 'NotFound', message);
export const conflict = (message: string) => new DomainError('conflict', 'Conflict', message);
export const payloadTooLarge = (message: string) => new DomainError('too-large', 'PayloadTooLarge', message);
export const internalError = (code = 'InternalError', message = 'An unexpected error occurred') =>
  new DomainError('internal', code, message);

/** The HTTP status a failed Azure SDK request carries (RestError's `statusCode`), if it is one. */
export const statusCodeOf = (thrown: unknown): number | undefined =>
  typeof thrown === 'object' && thrown !== null && 'statusCode' in thrown && typeof thrown.statusCode === 'number'
    ? thrown.statusCode
    : undefined;

/** The code of a failed system call (`ENOENT`, `EEXIST`), if it is one. */
export const errnoCode = (thrown: unknown): string | undefined =>
  thrown instanceof Error && 'code' in thrown && typeof thrown.code === 'string' ? thrown.code : undefined;

/** Turns anything thrown into an Error, so callers never handle `unknown`. */
export function toError(thrown: unknown): Error {
  if (thrown instanceof Error) return thrown;
  return new Error(typeof thrown === 'string' ? thrown : JSON.stringify(thrown));
}
