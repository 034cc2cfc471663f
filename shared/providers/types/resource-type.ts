// What a resource type is: its place in the provider tree and its definition schema, from which the type of
// its stored documents follows. One generic mechanism (providers/resources.ts) serves every type through this.
import { z } from 'zod';
import { narrowed } from '../../store/narrowed.js';
import type { Container, Doc, DocsOf, DocumentStore } from '../../store/types.js';

/** Fields the service sets on every resource; in a request body they are ignored. */
export const SERVICE_FIELDS = [
  'object_id',
  'created_on',
  'created_by',
  'updated_on',
  'updated_by',
  'deleted',
  'version',
] as const;

/** What every stored resource has, whatever its type: its place, its names and the service fields. */
export interface StoredFields extends Doc {
  type: string;
  name: string;
  object_id: string;
  display_name?: string | undefined;
  description?: string | undefined;
  created_on: string;
  created_by: string;
  updated_on: string;
  updated_by: string;
  deleted: boolean;
  /** Counts the creates and updates (providers/versions.ts); absent on resources older than versions: 1. */
  version?: number | undefined;
}

/** A stored resource of a type not (yet) known to the reader: the generic provider, link checks. */
export type AnyResource = StoredFields;

declare module '../../store/types.js' {
  interface StoredDocs {
    resources: AnyResource;
  }
}

/** The schema of a definition a caller sends; its output is the typed definition. */
export type DefinitionSchema = z.ZodType<{ name: string }>;

/**
 * A resource type as data: its place in the provider tree and its definition schema, the one source of
 * the type of its documents. What the service does around a write (checks, hooks) is attached where the
 * registry is assembled (registry.ts), so type definitions import no feature.
 */
export interface ResourceKind<S extends DefinitionSchema = DefinitionSchema> {
  /** `Svc.Agent` */
  provider: string;
  /** The plural path segment: `agents` */
  segment: string;
  /** The `type` field value: `agent` */
  type: string;
  /** Strict schema of the definition a caller sends (unknown fields are rejected). */
  schema: S;
  /** Written by the service only (pipeline runs): only list and get. */
  serviceWritten?: boolean;
  /**
   * Fields that belong to one instance, set there by the service (an agent's security group): artifact
   * packages neither carry nor compare them.
   */
  instanceFields?: readonly string[];
  /** Built-in resources served beside the stored ones (agent templates); read-only, their names taken. */
  seeds?: (instanceId: string) => AnyResource[];
  /** Built in and read-only (role definitions): only list and get. */
  builtIn?: (instanceId: string) => AnyResource[];
}

/** The definition of a kind as its schema outputs it (defaults applied). */
export type DefinitionOf<K extends ResourceKind> = z.output<K['schema']>;

/** A stored resource of a kind: its definition, typed by its schema, and the service fields. */
export type ResourceOf<K extends ResourceKind> = Omit<DefinitionOf<K>, keyof StoredFields> & StoredFields;

/** Whether a stored resource is of the kind (its `type`): the one narrowing from any resource to a kind. */
export const isOf = <K extends ResourceKind>(doc: AnyResource, kind: K): doc is ResourceOf<K> => doc.type === kind.type;

/** Whether a document of the resources container is a resource (not one of the service's own documents kept there). */
export const isResource = (doc: DocsOf<'resources'>): doc is AnyResource =>
  'type' in doc && typeof doc.type === 'string' && 'object_id' in doc && typeof doc.object_id === 'string';

/** The resources container as its resources: the generic provider, the cache, link checks. */
export const resourcesIn = (store: Pick<DocumentStore, 'container'>): Container<AnyResource> =>
  narrowed(store.container('resources'), isResource);

/** The resources of one kind, as a container of their type: read and written in their partition. */
export function resourcesOf<K extends ResourceKind>(
  store: Pick<DocumentStore, 'container'>,
  kind: K,
): Container<ResourceOf<K>> {
  const partition = partitionOf(kind);
  return narrowed(resourcesIn(store), (doc): doc is ResourceOf<K> => doc.pk === partition && isOf(doc, kind));
}

/**
 * The stored id of a resource: its name, case-folded. Names are unique within a type regardless of case
 * (`VICTIM` cannot sit beside `victim`), so scopes, which compare without case, name exactly one resource.
 */
export const resourceId = (name: string) => name.toLowerCase();

/** The partition of a resource type in the resources container. */
export const partitionOf = (t: Pick<ResourceKind, 'provider' | 'segment'>) => `${t.provider}/${t.segment}`;

export const objectIdOf = (instanceId: string, t: Pick<ResourceKind, 'provider' | 'segment'>, name: string) =>
  `/instances/${instanceId}/providers/${t.provider}/${t.segment}/${name}`;

/** Resource names: letters, digits and `_ . : -`, starting with a letter, digit or underscore. */
export const ResourceName = z
  .string()
  .regex(
    /^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,199}$/,
    'must be 1 to 200 letters, digits, underscores, dots, colons or hyphens',
  );

const ignored = (schema: z.ZodType) => schema.optional().describe('Set by the service; ignored in requests');

/** Accepted (and ignored) so a resource read with GET can be sent back as it is. */
const SERVICE_FIELD_SCHEMAS = {
  object_id: ignored(z.string()),
  created_on: ignored(z.string()),
  created_by: ignored(z.string()),
  updated_on: ignored(z.string()),
  updated_by: ignored(z.string()),
  deleted: ignored(z.boolean()),
  version: ignored(z.number()),
};

/**
 * A strict definition schema: `type` may be given and must then be the type's own. Built on first use (a
 * write, a check, the OpenAPI document): a process that only reads resources never builds it, and a cold
 * start does not pay for every type's schema (about a millisecond each).
 */
export function definition<T extends z.ZodRawShape>(type: string, shape: () => T) {
  return z.lazy(() =>
    z
      .object({
        type: z.literal(type).optional(),
        name: ResourceName,
        display_name: z.string().optional(),
        description: z.string().optional(),
        ...SERVICE_FIELD_SCHEMAS,
        ...shape(),
      })
      .strict(),
  );
}
