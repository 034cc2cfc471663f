// A facade's completion kept as an operation of the status container, so it can be retrieved and cancelled
// from any instance (an OpenAI response, an A2A task): admitted, in its session (a new one for a first
// turn), then waited for, queued for the async worker, or streamed. The quota reservation goes back when
// the run ends; a queued run takes it along, as an async completion does.
import type { CompletionDeps } from '../completions/completion-deps.js';
import type { Principal } from '../auth/principal.js';
import { admitted, releasing } from '../completions/admission.js';
import { runCompletion } from '../completions/completion.js';
import type { CompletionRequest, Facade } from '../completions/completion-request.js';
import type { Admitted } from '../completions/admit-request.js';
import {
  endOperation,
  markRecording,
  startOperation,
  type OperationDoc,
  type ResponseMeta,
} from '../completions/operations.js';
import { streamCompletion, type StreamFormat } from '../completions/stream.js';
import { json, type Reply } from '../http/types.js';
import type { OperationMessage } from '../queues/messages.js';
import { saveTraceContext } from '../telemetry/correlation.js';
import type { Producer } from '../queues/producer.js';

/** What this module uses of the service (the hosts pass the whole of it). */
export interface OperationRunDeps extends CompletionDeps {
  readonly producer: Producer;
}

export interface OperationRun {
  /** The Core completion request the protocol's call maps to. */
  request: CompletionRequest;
  operationId: string;
  facade: Facade;
  /** `wait` answers once it ended; `queue` at once, the worker runs it; `stream` answers with `format`'s events. */
  mode: 'wait' | 'queue' | 'stream';
  /** The operation as the protocol shows it. */
  present: (op: OperationDoc) => unknown;
  format?: (op: OperationDoc) => StreamFormat;
  /** Which failures answer with their error (the protocol's status) rather than with the failed operation. */
  throwOnFailure?: (error: unknown) => boolean;
  response?: ResponseMeta;
  /** The client went away (a stream stops). */
  signal: AbortSignal;
}

/**
 * A first turn opens a session of its own, named by the prompt's first line (after admission, so a refused request
 * leaves none behind).
 */
async function inNewSession(s: OperationRunDeps, principal: Principal, turn: Admitted): Promise<Admitted> {
  const firstLine = turn.request.user_prompt.trim().split('\n')[0] ?? '';
  const session = await s.conversations.create(
    principal.upn,
    firstLine.length > 80 ? `${firstLine.slice(0, 79)}…` : firstLine,
  );
  return { ...turn, session, sessionId: session.id, request: { ...turn.request, session_id: session.id } };
}

export function runAsOperation(s: OperationRunDeps, principal: Principal, run: OperationRun): Promise<Reply> {
  const { operationId, facade, mode } = run;
  return admitted(
    s,
    { principal, body: run.request },
    async (admittedTurn, reservation) => {
      const turn = admittedTurn.session ? admittedTurn : await inNewSession(s, principal, admittedTurn);
      const start = {
        facade,
        response: run.response,
        ...(mode === 'queue' ? { reservation } : { statusMessage: 'Running' }),
      };
      const trace = saveTraceContext();
      const op = await startOperation(s, principal, { request: turn.request, operationId, trace }, start);
      if (mode === 'queue') {
        await s.producer.send(s.config.asyncQueue, {
          key: op.id,
          operation_id: operationId,
        } satisfies OperationMessage);
        return json(200, run.present(op));
      }
      // A cancel on any instance before the answer is recorded keeps the turn out of the session.
      const options = { operationId, mayRepeat: false, beforeRecord: () => markRecording(s, op.id) };
      if (mode === 'stream' && run.format)
        return streamCompletion(s, principal, turn, {
          ...options,
          clientGone: run.signal,
          onEnd: () => releasing(s, reservation, Promise.resolve()),
          format: run.format(op),
        });
      const outcome = await releasing(s, reservation, runCompletion(s, principal, turn, options)).then(
        (result) => ({ result }),
        (error: unknown) => ({ error }),
      );
      const ended = await endOperation(s, op, outcome);
      if ('error' in outcome && run.throwOnFailure?.(outcome.error)) throw outcome.error;
      return json(200, run.present(ended), { 'x-operation-id': operationId });
    },
    { facade },
  );
}
