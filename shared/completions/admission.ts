// Admission of a completion, whichever protocol it came in by: the request is checked against everything it
// can fail on before any work starts or is queued, the quota last, so every protocol counts against the same
// quotas and answers with the same rate-limit headers.
import type { CompletionDeps } from './completion-deps.js';
import type { Principal } from '../auth/principal.js';
import { DomainError } from '../errors.js';
import type { Reply } from '../http/types.js';
import type { CompletionRequest, Facade } from './completion-request.js';
import { admit, type Admitted } from './admit-request.js';
import { agentCurrency } from './agent-chain.js';
import type { QuotaReservation } from './quotas.js';

/** What this module uses of the service (the hosts pass the whole of it). */
export type AdmissionDeps = CompletionDeps;

/**
 * Admits the request, then runs `answer`. Its reply, or the error it fails with, carries the rate-limit
 * headers of the quota closest to its limit; a 429 carries those of the exceeded quota.
 */
export async function admitted(
  s: AdmissionDeps,
  { principal, body }: { principal: Principal; body: CompletionRequest },
  answer: (admitted: Admitted, reservation: QuotaReservation) => Promise<Reply>,
  options: { facade?: Facade | undefined } = {},
): Promise<Reply> {
  const { request, reservation, limits } = await reserve(s, principal, body, options);
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
  options: { facade?: Facade | undefined } = {},
): Promise<{ request: Admitted; reservation: QuotaReservation; limits: Record<string, string> }> {
  const request = await admit(s, principal, body, options);
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
