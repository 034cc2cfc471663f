// Runs Azurite (blobs and queues) as a child process: for `npm start` and for the test suites.
import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import net from 'node:net';

/** Azurite's well-known development account (public, documented by Microsoft). */
const ACCOUNT = 'devstoreaccount1';
const KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';

export interface AzuriteOptions {
  blobPort: number;
  queuePort: number;
  /** Data folder; absent keeps everything in memory. */
  location?: string;
}

export interface Azurite {
  connectionString: string;
  blobPort: number;
  queuePort: number;
  stop(): Promise<void>;
}

export const connectionStringFor = (blobPort: number, queuePort: number) =>
  `DefaultEndpointsProtocol=http;AccountName=${ACCOUNT};AccountKey=${KEY};` +
  `BlobEndpoint=http://127.0.0.1:${blobPort}/${ACCOUNT};QueueEndpoint=http://127.0.0.1:${queuePort}/${ACCOUNT};`;

/** Resolves once something accepts connections on the port. */
export function isListening(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * Ports this process has handed out: the kernel may pick a port just closed again, and two servers started
 * side by side (a Core and a Management API) must not be given the same one.
 */
const handedOut = new Set<number>();

/** A port nobody listens on now, and not one this process handed out before. */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const server = net.createServer();
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        const { port } = server.address() as net.AddressInfo;
        server.close(() => resolve(port));
      });
    });
    if (handedOut.has(port)) continue;
    handedOut.add(port);
    return port;
  }
}

function run(bin: string, args: string[]): ChildProcess {
  const child = spawn(process.execPath, [bin, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  child.stderr.resume();
  return child;
}

export async function startAzurite(options: AzuriteOptions): Promise<Azurite> {
  const require = createRequire(import.meta.url);
  const dir = require.resolve('azurite/package.json').replace(/package\.json$/, '');
  const common = [
    '--silent',
    '--disableTelemetry',
    '--skipApiVersionCheck',
    ...(options.location ? ['--location', options.location] : ['--inMemoryPersistence']),
  ];
  const children = [
    run(`${dir}dist/src/blob/main.js`, [...common, '--blobHost', '127.0.0.1', '--blobPort', String(options.blobPort)]),
    run(`${dir}dist/src/queue/main.js`, [
      ...common,
      '--queueHost',
      '127.0.0.1',
      '--queuePort',
      String(options.queuePort),
    ]),
  ];
  const stop = async () => {
    await Promise.all(
      children.map(
        (c) =>
          new Promise<void>((resolve) => {
            if (c.exitCode !== null) return resolve();
            c.once('exit', () => resolve());
            c.kill('SIGTERM');
          }),
      ),
    );
  };
  const deadline = Date.now() + 20_000;
  for (const port of [options.blobPort, options.queuePort]) {
    while (!(await isListening(port))) {
      if (Date.now() > deadline || children.some((c) => c.exitCode !== null)) {
        await stop();
        throw new Error(`Azurite did not start on port ${port}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    connectionString: connectionStringFor(options.blobPort, options.queuePort),
    blobPort: options.blobPort,
    queuePort: options.queuePort,
    stop,
  };
}
