// A worker thread that matches texts too long to match on the request thread: a blocklist against a text, or
// an evaluation case's rule checks against an answer. Each task is compiled here (the last list and checks
// kept) and answered with its reason or undefined; the matcher (matcher.ts) terminates this thread at the
// task's deadline, so no expression and no text can hold it longer.
import { parentPort } from 'node:worker_threads';
import { cachedBlocklist } from './blocklist.js';
import { compileChecks, type Expect } from './checks.js';

/** What the matcher asks: a blocklist (its setting's value) against a text, or a case's checks against an answer. */
export type MatchTask = { id: number } & (
  { kind: 'blocklist'; list: string | undefined; text: string } | { kind: 'checks'; expect: Expect; text: string }
);
export type MatchAnswer = { id: number; reason: string | undefined } | { id: number; error: string };

/** What the worker says once its modules are loaded: a task's deadline runs from then, not from its start. */
export const MATCHER_READY = 'match-worker-ready';

const blocklistOf = cachedBlocklist();
let lastChecks: { expect: string; checks: ReturnType<typeof compileChecks> } | undefined;

parentPort?.on('message', (task: MatchTask) => {
  try {
    let reason: string | undefined;
    if (task.kind === 'blocklist') {
      const list = blocklistOf(task.list);
      if (typeof list === 'string') throw new Error(list);
      reason = list.match(task.text, Infinity);
    } else {
      const key = JSON.stringify(task.expect);
      if (lastChecks?.expect !== key) lastChecks = { expect: key, checks: compileChecks(task.expect) };
      reason = lastChecks.checks.failure(task.text);
    }
    parentPort?.postMessage({ id: task.id, reason } satisfies MatchAnswer);
  } catch (e) {
    parentPort?.postMessage({ id: task.id, error: e instanceof Error ? e.message : String(e) } satisfies MatchAnswer);
  }
});

parentPort?.postMessage(MATCHER_READY);
