// Management API resources as the portal reads them.

export interface Resource {
  name: string;
  object_id?: string;
  deleted?: boolean;
  [key: string]: unknown;
}

/** A field of a resource as table text (objects are not shown). */
export const text = (v: unknown): string => (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? String(v) : '');

/** List items come as the resource itself or wrapped as `{ resource }`, by provider. */
export const unwrap = (item: Resource | { resource: Resource }): Resource =>
  'resource' in item && item.resource !== null && typeof item.resource === 'object' ? (item.resource as Resource) : (item as Resource);
