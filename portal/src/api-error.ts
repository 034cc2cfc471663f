// A failed call as the portals show it: the error bodies of both APIs read into one error type.
import type { components as CoreComponents } from './api-types/core';
import type { components as ManagementComponents } from './api-types/management';

type Core = CoreComponents['schemas'];

/** A field the API refused, and why (the Core API's validation details). */
export type FieldError = NonNullable<Core['CoreError']['error']['details']>[number];

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly details: readonly FieldError[] = [],
    readonly code?: string,
  ) {
    super(message);
  }
}

/**
 * The error bodies both documents give, read field by field: the Core and Management envelopes, problem
 * details (agent property actions) and quota answers. A body may also be none of them (a proxy's page).
 */
type ErrorBody = Partial<
  Core['CoreError'] &
    ManagementComponents['schemas']['ManagementError'] &
    Core['ProblemDetails'] &
    Core['QuotaResponse']
>;

/** The error of a failed answer, with the message of whichever error body it has, else its status. */
export async function errorOf(r: Response): Promise<ApiError> {
  // JSON is untyped until read: the body is one of the documents' error bodies, or anything else.
  const body = (await r.json().catch(() => undefined)) as ErrorBody | undefined;
  const message = body?.error?.message ?? body?.detail ?? body?.message ?? `${r.status} ${r.statusText}`;
  return new ApiError(r.status, message, body?.error?.details ?? [], body?.error?.code);
}
