// A facade's completion kept as an operation of the status container, so it can be retrieved and cancelled
// from any instance (an OpenAI response, an A2A task): admitted, in its session (a new one for a first
// turn), then waited for, queued for the async worker, or streamed. The quota reservation goes back when
// the run ends; a queued run takes it along, as an async completion does.
import type { Principal } from '../auth/principal.js';
import { admitted, releasing } from '../completions/admission.js';
import { runCompletion, type Admitted, type CompletionRequest, type Facade } from '../completions/completion.js';
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
import type { Authorizer } from '../auth/authorizer.js';
import type { PrincipalDirectory } from '../auth/directory.js';
import type { Budgets } from '../completions/budgets.js';
import type { Quotas } from '../completions/quotas.js';
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
import type { Producer } from '../queues/producer.js';
import type { DocumentStore } from '../store/types.js';

/** What this module uses of the service (the hosts pass the whole of it). */
export interface OperationRunDeps {
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
  readonly producer: Producer;
  readonly quotas: Quotas;
  readonly resourceCache: ResourceCache;
  readonly settings: AppSettings;
  readonly store: DocumentStore;
  readonly turns: SessionTurns;
  readonly userDispatcher: Dispatcher;
  readonly vectors: VectorIndex;
}

export interface OperationRun {
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

export function runAsOperation(
  s: OperationRunDeps,
  principal: Principal,
  body: CompletionRequest,
  run: OperationRun,
): Promise<Reply> {
  const { operationId, facade, mode } = run;
  return admitted(
    s,
    principal,
    body,
    async (admittedTurn, reservation) => {
      const turn = admittedTurn.session ? admittedTurn : await inNewSession(s, principal, admittedTurn);
      const start = {
        facade,
        response: run.response,
        ...(mode === 'queue' ? { reservation } : { statusMessage: 'Running' }),
      };
      const op = await startOperation(s, principal, turn.request, operationId, saveTraceContext(), start);
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
        return streamCompletion(
          s,
          principal,
          turn,
          options,
          run.signal,
          () => releasing(s, reservation, Promise.resolve()),
          run.format(op),
        );
      const outcome = await releasing(s, reservation, runCompletion(s, principal, turn, options)).then(
        (result) => ({ result }),
        (error: unknown) => ({ error }),
      );
      const ended = await endOperation(s, op, outcome);
      if ('error' in outcome && run.throwOnFailure?.(outcome.error)) throw outcome.error;
      return json(200, run.present(ended), { 'x-operation-id': operationId });
    },
    facade,
  );
}
