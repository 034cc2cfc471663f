// Integration suite setup: real local servers on free ports, stopped after the run.
import type { AddressInfo } from 'node:net';
import { createHttpServer } from '@vercel/cosmosdb-server';
import type { TestProject } from 'vitest/node';
import { freePort, startAzurite } from '../../scripts/azurite.js';

declare module 'vitest' {
  export interface ProvidedContext {
    storageConnectionString: string;
    cosmosEndpoint: string;
  }
}

export default async function setup(project: TestProject) {
  const azurite = await startAzurite({ blobPort: await freePort(), queuePort: await freePort() });
  const cosmos = createHttpServer({ keepAlive: true });
  await new Promise<void>((resolve) => cosmos.listen(0, '127.0.0.1', resolve));
  project.provide('storageConnectionString', azurite.connectionString);
  project.provide('cosmosEndpoint', `http://127.0.0.1:${(cosmos.address() as AddressInfo).port}`);
  return async () => {
    await new Promise<void>((resolve) => cosmos.close(() => resolve()));
    cosmos.closeAllConnections();
    await azurite.stop();
  };
}
