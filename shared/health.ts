// Liveness and readiness for orchestrators and load balancers: live means the process answers; ready means
// what a request needs answers too: the store, blob storage, the queues, and the identity provider's keys.
// Each check has 2 s; the result is kept for 2 s, so frequent probes cost the dependencies little.
import { z } from 'zod';
import type { Services } from './services.js';
import { createBlobService, createQueueService, type BlobService, type QueueService } from './store/storage.js';

const CHECK_TIMEOUT_MS = 2000;
const CACHE_MS = 2000;

/** One dependency's answer: whether it answered, how fast, and why not. */
const Check = z.object({ ok: z.boolean(), duration_ms: z.number(), error: z.string().optional() });
type Check = z.output<typeof Check>;

/** The answer of `/health/ready` (checks: store, blobs, queues, identity). */
export const Readiness = z
  .object({ status: z.enum(['ready', 'unavailable']), checks: z.record(z.string(), Check) })
  .meta({ id: 'Readiness' });
export type Readiness = z.output<typeof Readiness>;

async function check(probe: () => Promise<unknown>): Promise<Check> {
  const started = Date.now();
  let timer: NodeJS.Timeout | undefined;
  try {
    const timeout = new Promise<never>(
      (_, reject) =>
        (timer = setTimeout(() => reject(new Error(`no answer within ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS)),
    );
    const result = await Promise.race([probe(), timeout]);
    if (result === false) throw new Error('not loaded');
    return { ok: true, duration_ms: Date.now() - started };
  } catch (e) {
    // The reason, not the stack: enough for an operator, nothing of the configuration.
    return {
      ok: false,
      duration_ms: Date.now() - started,
      error: (e instanceof Error ? e.message : String(e)).split('\n')[0]?.slice(0, 200) ?? 'failed',
    };
  } finally {
    clearTimeout(timer);
  }
}

const cached = new WeakMap<Services, { at: number; result: Promise<Readiness> }>();
/** Storage clients that do not retry: a probe answers now, not after the SDK's backoff. */
const probes = new WeakMap<Services, { blobs: BlobService; queues: QueueService }>();
const probeClients = (s: Services) => {
  let p = probes.get(s);
  if (!p) {
    p = {
      blobs: createBlobService(s.config.storage, s.gate, { maxTries: 1 }),
      queues: createQueueService(s.config.storage, s.gate, { maxTries: 1 }),
    };
    probes.set(s, p);
  }
  return p;
};

export function readiness(s: Services): Promise<Readiness> {
  const hit = cached.get(s);
  if (hit && Date.now() - hit.at < CACHE_MS) return hit.result;
  const result = (async (): Promise<Readiness> => {
    const probe = probeClients(s);
    const [store, blobs, queues, identity] = await Promise.all([
      check(() => s.store.container('resources').read('health', 'probe')),
      // Reachable is what counts: a container or queue made on first use may not exist yet.
      check(async () => (await probe.blobs.container(s.config.filesContainer).client()).exists().then(() => true)),
      check(async () =>
        (await probe.queues())
          .getQueueClient(s.config.asyncQueue)
          .exists()
          .then(() => true),
      ),
      check(() => s.bearer.keysLoaded()),
    ]);
    const checks = { store, blobs, queues, identity };
    return { status: Object.values(checks).every((c) => c.ok) ? 'ready' : 'unavailable', checks };
  })();
  // A failure is shared only by the probes already waiting for it: the next probe checks again, so recovery
  // (Azurite finishing its start, the store back) shows at once rather than after the cache time.
  const entry = { at: Date.now(), result };
  cached.set(s, entry);
  void result.then((r) => {
    if (r.status !== 'ready' && cached.get(s) === entry) cached.delete(s);
  });
  return result;
}
