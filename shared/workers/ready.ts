// When a worker thread or process has loaded its modules: it says so with a message of its own (a token),
// and its tasks' deadlines run from then, so starting one never counts against its first task.
import type { EventEmitter } from 'node:events';

/** Settles once `worker` sends `token`, or fails to start (its error is its tasks' to report). */
export function readyOn(worker: EventEmitter, token: string): Promise<void> {
  return new Promise<void>((resolve) => {
    const settle = (message?: unknown) => {
      if (message !== undefined && message !== token) return;
      worker.off('message', settle);
      worker.off('error', onError);
      resolve();
    };
    const onError = () => settle();
    worker.on('message', settle);
    worker.once('error', onError);
  });
}
