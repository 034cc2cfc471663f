// Management API resources as the portal reads them. The document gives the resource of an envelope as an open
// object (any fields, by type), so the portal reads it as its name and whatever other fields a view shows.

export interface Resource {
  name: string;
  [key: string]: unknown;
}

/** A field of a resource as table text (objects are not shown). */
export const text = (v: unknown): string =>
  typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? String(v) : '';

/** The resource of an envelope (`{ resource, roles, actions }`), with its name as text. */
export const unwrap = ({ resource }: { resource: Record<string, unknown> }): Resource => ({
  ...resource,
  name: text(resource.name),
});
