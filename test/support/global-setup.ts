// Integration suite setup: the bundle `npm start` runs, built once; real local servers on free ports, stopped after the
// run; then a check that the run left no process of its own behind (every child the tests start carries the run's
// marker).
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { createHttpServer } from '@vercel/cosmosdb-server';
import type { TestProject } from 'vitest/node';
import { freePort, startAzurite } from '../../scripts/azurite.js';
import { bundle } from '../../scripts/bundle.js';
import { RUN_MARKER } from './processes.js';

declare module 'vitest' {
  export interface ProvidedContext {
    storageConnectionString: string;
    cosmosEndpoint: string;
    testRunId: string;
  }
}

/** Processes (Linux: from /proc) whose environment carries the marker. */
function marked(marker: string): { pid: number; command: string }[] {
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((p) => /^\d+$/.test(p));
  } catch {
    return [];
  }
  const found: { pid: number; command: string }[] = [];
  for (const pid of pids) {
    try {
      if (!readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(marker)) continue;
      found.push({
        pid: Number(pid),
        command: readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim(),
      });
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return found;
}

export default async function setup(project: TestProject) {
  const runId = randomUUID();
  // What `npm start` runs, built once: the tests that start it share it (a build each would race).
  await bundle();
  const azurite = await startAzurite({ blobPort: await freePort(), queuePort: await freePort() });
  const cosmos = createHttpServer({ keepAlive: true });
  await new Promise<void>((resolve) => cosmos.listen(0, '127.0.0.1', resolve));
  project.provide('storageConnectionString', azurite.connectionString);
  project.provide('cosmosEndpoint', `http://127.0.0.1:${(cosmos.address() as AddressInfo).port}`);
  project.provide('testRunId', runId);
  return async () => {
    await new Promise<void>((resolve) => cosmos.close(() => resolve()));
    cosmos.closeAllConnections();
    await azurite.stop();
    const left = marked(`${RUN_MARKER}=${runId}`);
    for (const p of left) process.kill(p.pid, 'SIGKILL');
    if (left.length > 0) {
      const listed = left.map((p) => `  ${p.pid} ${p.command}`).join('\n');
      throw new Error(`The test run left ${left.length} process(es) running (now killed):\n${listed}`);
    }
  };
}
