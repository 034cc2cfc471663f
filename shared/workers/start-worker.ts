// Worker threads of the service's own modules: `./<name>.js` beside the module that starts them (in the
// per-file build and in the bundle, whose entries sit beside its chunks), or `.ts` through tsx from sources.
import { Worker, type ResourceLimits } from 'node:worker_threads';

/** What a worker starts with: its data, its heap limits, and an environment of its own. */
export interface WorkerStart {
  workerData?: unknown;
  resourceLimits?: ResourceLimits | undefined;
  env?: Record<string, string> | undefined;
}

/** Starts the worker `name` beside the module whose `import.meta.url` is `base`; it does not hold the process open. */
export function startWorker(base: string, name: string, { workerData, resourceLimits, env }: WorkerStart = {}): Worker {
  // From TypeScript sources (development, tests) the worker is loaded through tsx; built code runs plain.
  const source = base.endsWith('.ts');
  const url = new URL(`./${name}.${source ? 'ts' : 'js'}`, base);
  // tsx registers itself inside the worker: Node 20 workers do not take --import in execArgv.
  const boot = `import('tsx/esm/api').then((tsx) => { tsx.register(); return import(${JSON.stringify(url.href)}); })`;
  // `env` replaces the copy of the service's environment the worker would otherwise get.
  const options = { workerData, ...(resourceLimits ? { resourceLimits } : {}), ...(env ? { env } : {}) };
  const worker = source ? new Worker(boot, { eval: true, ...options }) : new Worker(url, options);
  worker.unref();
  return worker;
}
