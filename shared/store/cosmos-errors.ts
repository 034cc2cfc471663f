// Cosmos DB failures as the store's errors: the SDK reports a refused request by its HTTP status in `code`,
// which the container, its batches and the start-up check each turn into what a caller can act on.
import { ConflictError, NotFoundError, PreconditionFailedError, StoreError } from './types.js';

/** The HTTP status of a failed Cosmos DB request, if it is one. */
export const status = (e: unknown): number | undefined =>
  typeof e === 'object' && e !== null && 'code' in e && typeof e.code === 'number' ? e.code : undefined;

export function mapError(e: unknown, what: string): Error {
  switch (status(e)) {
    case 409:
      return new ConflictError(`${what} already exists`);
    case 412:
      return new PreconditionFailedError(`${what} was changed by another writer`);
    case 404:
      return new NotFoundError(`${what} not found`);
    default:
      return e instanceof Error ? e : new StoreError(String(e));
  }
}
