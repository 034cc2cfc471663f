// One error type for everything a request can fail with; the pipeline turns it into the route's envelope.

/** One failed field of a validation error (spec 2.7). */
export interface FieldError {
  field: string;
  message: string;
}

/**
 * An error with an HTTP status and a stable code. `details` feed the Core validation envelope;
 * `body` replaces the envelope entirely (the 429 quota response is such a body).
 */
export class ApiError extends Error {
  override name = 'ApiError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: readonly FieldError[] = [],
    readonly headers: Record<string, string> = {},
    readonly body?: unknown,
  ) {
    super(message);
  }
}

export const badRequest = (message: string, details: readonly FieldError[] = []) =>
  new ApiError(400, 'BadRequest', message, details);
export const validationError = (details: readonly FieldError[]) =>
  new ApiError(400, 'ValidationError', details[0]?.message ?? 'Invalid request', details);
export const unauthorized = (message = 'Authentication required') =>
  new ApiError(401, 'Unauthorized', message, [], { 'www-authenticate': 'Bearer' });
export const forbidden = (message = 'Insufficient permissions') => new ApiError(403, 'Forbidden', message);
export const notFound = (message = 'Resource not found') => new ApiError(404, 'NotFound', message);
export const conflict = (message: string) => new ApiError(409, 'Conflict', message);
export const payloadTooLarge = (message: string) => new ApiError(413, 'PayloadTooLarge', message);

/** Turns anything thrown into an Error, so callers never handle `unknown`. */
export function toError(thrown: unknown): Error {
  if (thrown instanceof Error) return thrown;
  return new Error(typeof thrown === 'string' ? thrown : JSON.stringify(thrown));
}
