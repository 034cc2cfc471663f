// Admission of a completion, whichever protocol it came in by: the request is checked against everything it
// can fail on before any work starts or is queued, the quota last, so every protocol counts against the same
// quotas and answers with the same rate-limit headers.
import type { Principal } from '../auth/principal.js';
import { DomainError } from '../errors.js';
import type { Reply } from '../http/types.js';
import { admit, agentCurrency, type Admitted, type CompletionRequest, type Facade } from './completion.js';
import type { QuotaReservation } from './quotas.js';
import type { Authorizer } from '../auth/authorizer.js';
import type { PrincipalDirectory } from '../auth/directory.js';
import type { Budgets } from './budgets.js';
import type { Quotas } from './quotas.js';
import type { Config } from '../config.js';
import type { Conversations } from '../conversations/conversations.js';
import type { SessionTurns } from '../conversations/turns.js';
import type { Files } from '../files/files.js';
import type { ExtractionPool } from '../knowledge/extract-pool.js';
import type { VectorIndex } from '../knowledge/vector-index.js';
import type { Log } from '../log.js';
import type { Memories } from '../memory/memory.js';
import type { ModelCredentials } from '../models/credentials.js';
import type { ModelGateway } from '../models/gateway.js';
import type { Dispatcher } from '../net/undici.js';
import type { PluginRuntime } from '../plugins/runtime.js';
import type { ResourceCache } from '../providers/resource-cache.js';
import type { AppSettings } from '../providers/settings.js';
import type { DocumentStore } from '../store/types.js';

/** What this module uses of the service (the hosts pass the whole of it). */
export interface AdmissionDeps {
  readonly authorizer: Authorizer;
  readonly budgets: Budgets;
  readonly config: Config;
  readonly conversations: Conversations;
  readonly credentials: ModelCredentials;
  readonly directory: PrincipalDirectory;
  readonly extraction: ExtractionPool;
  readonly files: Files;
  readonly log: Log;
  readonly memories: Memories;
  readonly models: ModelGateway;
  readonly plugins: PluginRuntime;
  readonly quotas: Quotas;
  readonly resourceCache: ResourceCache;
  readonly settings: AppSettings;
  readonly store: DocumentStore;
  readonly turns: SessionTurns;
  readonly userDispatcher: Dispatcher;
  readonly vectors: VectorIndex;
}

/**
 * Admits the request, then runs `answer`. Its reply, or the error it fails with, carries the rate-limit
 * headers of the quota closest to its limit; a 429 carries those of the exceeded quota.
 */
export async function admitted(
  s: AdmissionDeps,
  principal: Principal,
  body: CompletionRequest,
  answer: (admitted: Admitted, reservation: QuotaReservation) => Promise<Reply>,
  facade?: Facade,
): Promise<Reply> {
  const { request, reservation, limits } = await reserve(s, principal, body, facade);
  try {
    const reply = await answer(request, reservation);
    // The run may have added headers (Svc-Budget, once the model call's cost was reserved).
    return { ...reply, headers: { ...reply.headers, ...limits, ...request.headers } };
  } catch (e) {
    await s.quotas.release(reservation);
    if (e instanceof DomainError) Object.assign(e.headers, limits);
    throw e;
  }
}

/**
 * Admits the request, refuses it when a budget that applies is spent (before it counts against a quota), and
 * reserves its quotas: the reservation, and the rate-limit and budget headers to answer with.
 */
export async function reserve(
  s: AdmissionDeps,
  principal: Principal,
  body: CompletionRequest,
  facade?: Facade,
): Promise<{ request: Admitted; reservation: QuotaReservation; limits: Record<string, string> }> {
  const request = await admit(s, principal, body, facade);
  const budget = await s.budgets.check(principal, request.agent, () => agentCurrency(s, request.agent));
  const { headers: limits, reservation } = await s.quotas.enforce(principal, request.agent.name);
  return { request, reservation, limits: { ...limits, ...budget } };
}

/** Gives a call's quota reservation back when its run ends, however it ends. */
export const releasing = <T>(s: AdmissionDeps, reservation: QuotaReservation, run: Promise<T>): Promise<T> =>
  run.finally(() =>
    s.quotas
      .release(reservation)
      .catch((e: unknown) =>
        s.log.warn('A quota reservation was not released', { error: e instanceof Error ? e.message : String(e) }),
      ),
  );
