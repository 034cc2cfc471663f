// Resources read on the completion path (agents, workflows, prompts, models, endpoints), cached by object
// id. Writes through this instance invalidate at once; other instances see changes within the TTL.
import type { Container } from '../store/types.js';
import {
  isOf,
  partitionOf,
  resourceId,
  type AnyResource,
  type ResourceKind,
  type ResourceOf,
} from './types/resource-type.js';

const OBJECT_ID = /^\/instances\/([^/]+)\/providers\/([^/]+)\/([^/]+)\/([^/]+)$/;

/** The partition and id of a resource object id, or undefined when it is not one of this instance. */
export function locate(objectId: string, instanceId: string): { pk: string; id: string } | undefined {
  const m = OBJECT_ID.exec(objectId);
  if (!m || m[1]?.toLowerCase() !== instanceId) return undefined;
  return { pk: `${m[2]}/${m[3]}`, id: resourceId(m[4] ?? '') };
}

export class ResourceCache {
  private readonly entries = new Map<string, { doc: AnyResource | undefined; expires: number }>();
  private readonly queries = new Map<string, { doc: AnyResource | undefined; expires: number }>();

  constructor(
    private readonly container: Container<AnyResource>,
    private readonly instanceId: string,
    private readonly ttlMs = 15_000,
  ) {}

  /** The live (not deleted) resource, or undefined; given a kind, only a resource of that kind. */
  async get<K extends ResourceKind>(objectId: string, kind: K): Promise<ResourceOf<K> | undefined>;
  async get(objectId: string): Promise<AnyResource | undefined>;
  async get(objectId: string, kind?: ResourceKind): Promise<AnyResource | undefined> {
    const doc = await this.live(objectId);
    return doc && (!kind || isOf(doc, kind)) ? doc : undefined;
  }

  private async live(objectId: string): Promise<AnyResource | undefined> {
    // Keyed as written: an id spelled otherwise (a provider path in other case) is looked up on its own, so a
    // miss under one spelling never hides the resource from another, and a hit never answers for one.
    const key = objectId;
    const hit = this.entries.get(key);
    if (hit && hit.expires > Date.now()) return hit.doc;
    const where = locate(objectId, this.instanceId);
    const doc = where ? await this.container.read(where.pk, where.id) : undefined;
    const live = doc && !doc.deleted ? doc : undefined;
    if (this.entries.size > 10_000) this.entries.clear();
    this.entries.set(key, { doc: live, expires: Date.now() + this.ttlMs });
    return live;
  }

  /** Forgets a resource, and every lookup by field (the resource may now answer one, or no longer). */
  invalidate(objectId: string): void {
    const lower = objectId.toLowerCase();
    for (const key of this.entries.keys()) if (key.toLowerCase() === lower) this.entries.delete(key);
    this.queries.clear();
  }

  /**
   * The first live resource of a type (partition) whose field has the value, by name: lookups by something
   * other than the name (the data pipeline of a knowledge index), cached like reads.
   */
  async findBy<K extends ResourceKind>(
    kind: K,
    field: string & keyof ResourceOf<K>,
    value: string,
  ): Promise<ResourceOf<K> | undefined> {
    const partition = partitionOf(kind);
    const key = `?${partition}\n${field}\n${value}`;
    const hit = this.queries.get(key);
    if (hit && hit.expires > Date.now()) return hit.doc && isOf(hit.doc, kind) ? hit.doc : undefined;
    const { items } = await this.container.query({
      partition,
      where: [
        { field, op: 'eq', value },
        { field: 'deleted', op: 'ne', value: true },
      ],
      orderBy: [{ field: 'name' }],
      limit: 1,
    });
    if (this.queries.size > 1000) this.queries.clear();
    const found = items[0];
    this.queries.set(key, { doc: found, expires: Date.now() + this.ttlMs });
    return found && isOf(found, kind) ? found : undefined;
  }
}
