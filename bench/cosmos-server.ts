// A Cosmos-compatible server (@vercel/cosmosdb-server) in its own process, as a remote account would be:
// prints its URL, serves until killed. For `npm run bench -- completions` on the Cosmos adapter.
import type { AddressInfo } from 'node:net';
import { createHttpServer } from '@vercel/cosmosdb-server';

const server = createHttpServer({ keepAlive: true });
server.listen(0, '127.0.0.1', () =>
  process.stdout.write(`http://127.0.0.1:${(server.address() as AddressInfo).port}\n`),
);
process.on('SIGTERM', () => process.exit(0));
