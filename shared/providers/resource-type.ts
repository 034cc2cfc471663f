// What a resource type is: its place in the provider tree, its definition schema and its lifecycle hooks.
// One generic mechanism (resources.ts) serves every type through this description.
import { z } from 'zod';
import type { Principal } from '../auth/principal.js';
import type { Services } from '../services.js';
import type { Doc } from '../store/types.js';

/** Fields the service sets on every resource; in a request body they are ignored. */
export const SERVICE_FIELDS = ['object_id', 'created_on', 'created_by', 'updated_on', 'updated_by', 'deleted'] as const;

/** A resource as stored: the definition plus the service fields. */
export interface ResourceDoc extends Doc {
  type: string;
  name: string;
  object_id: string;
  display_name?: string;
  description?: string;
  created_on: string;
  created_by: string;
  updated_on: string;
  updated_by: string;
  deleted: boolean;
  [field: string]: unknown;
}

export interface HookContext {
  services: Services;
  principal: Principal;
  objectId: string;
}

export interface ResourceType {
  /** `Svc.Agent` */
  provider: string;
  /** The plural path segment: `agents` */
  segment: string;
  /** The `type` field value: `agent` */
  type: string;
  /** Strict schema of the definition a caller sends (unknown fields are rejected). */
  schema: z.ZodType<{ name: string } & Record<string, unknown>>;
  /** Written by the service only (pipeline runs): only list and get. */
  serviceWritten?: boolean;
  /** Built in and read-only (role definitions): only list and get. */
  builtIn?: (instanceId: string) => ResourceDoc[];
  /** Fields the service computes, from the new definition and the stored resource when updating. */
  computed?: (definition: Record<string, unknown>, existing: ResourceDoc | undefined, ctx: HookContext) => Record<string, unknown>;
  /** Checks that need the running service (configuration, other resources); throws a 4xx ApiError. */
  validate?: (definition: Record<string, unknown>, ctx: HookContext) => Promise<void>;
  /**
   * Authorization beyond write on the resource path (role assignments: write at the scope they grant, and
   * at the scope the stored assignment granted when it is being changed).
   */
  authorizeWrite?: (definition: Record<string, unknown>, existing: ResourceDoc | undefined, ctx: HookContext) => Promise<void>;
  /** Authorization beyond delete on the resource path (role assignments: delete at the scope they grant). */
  authorizeDelete?: (doc: ResourceDoc, ctx: HookContext) => Promise<void>;
  /** Runs after a create (not an update). */
  afterCreate?: (doc: ResourceDoc, ctx: HookContext) => Promise<void>;
  /** Runs after every write, delete and purge: cache invalidation. */
  afterChange?: (doc: ResourceDoc, ctx: HookContext) => Promise<void> | void;
  /** What reads show of a stored resource (secret values masked); the stored document when absent. */
  present?: (resource: Record<string, unknown>) => Record<string, unknown>;
  /** Runs after a purge. */
  afterPurge?: (doc: ResourceDoc, ctx: HookContext) => Promise<void>;
}

/**
 * The stored id of a resource: its name, case-folded. Names are unique within a type regardless of case
 * (`VICTIM` cannot sit beside `victim`), so scopes, which compare without case, name exactly one resource.
 */
export const resourceId = (name: string) => name.toLowerCase();

/** The partition of a resource type in the resources container. */
export const partitionOf = (t: Pick<ResourceType, 'provider' | 'segment'>) => `${t.provider}/${t.segment}`;

export const objectIdOf = (instanceId: string, t: Pick<ResourceType, 'provider' | 'segment'>, name: string) =>
  `/instances/${instanceId}/providers/${t.provider}/${t.segment}/${name}`;

/** Resource names: letters, digits and `_ . : -`, starting with a letter, digit or underscore. */
export const ResourceName = z
  .string()
  .regex(/^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,199}$/, 'must be 1 to 200 letters, digits, underscores, dots, colons or hyphens');

const ignored = (schema: z.ZodType) => schema.optional().describe('Set by the service; ignored in requests');

/** Accepted (and ignored) so a resource read with GET can be sent back as it is. */
const SERVICE_FIELD_SCHEMAS = {
  object_id: ignored(z.string()),
  created_on: ignored(z.string()),
  created_by: ignored(z.string()),
  updated_on: ignored(z.string()),
  updated_by: ignored(z.string()),
  deleted: ignored(z.boolean()),
};

/** A strict definition schema: `type` may be given and must then be the type's own. */
export function definition<T extends z.ZodRawShape>(type: string, shape: T) {
  return z
    .object({
      type: z.literal(type).optional(),
      name: ResourceName,
      display_name: z.string().optional(),
      description: z.string().optional(),
      ...SERVICE_FIELD_SCHEMAS,
      ...shape,
    })
    .strict();
}
