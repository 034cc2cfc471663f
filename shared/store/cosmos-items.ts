// Documents as the Cosmos DB SDK takes and gives them: the body of a bulk or batch operation is typed as a JSON
// object, and what the SDK returns carries Cosmos's system properties, which the store's callers never see.
import type { ItemDefinition, JSONObject, Resource } from '@azure/cosmos';
import type { Doc, Stored } from './types.js';

/** A document as the body of a bulk or batch operation: an item, which the SDK's JSON object type takes. */
export const itemBody = (item: ItemDefinition): JSONObject => item;

/** A document as the SDK returns it, without Cosmos's system properties other than the ETag. */
export function withoutSystemProperties<T extends Doc>(resource: T & Resource): Stored<T> {
  const doc = { ...resource };
  for (const key of Object.keys(doc)) if (key.startsWith('_') && key !== '_etag') Reflect.deleteProperty(doc, key);
  return doc;
}
