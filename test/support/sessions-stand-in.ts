// A local stand-in of the Azure Container Apps dynamic sessions REST API (a Python code interpreter session
// pool), for the sessions sandbox adapter's tests: `POST code/execute`, `POST files/upload`, `GET files`,
// `GET files/content/{name}`, each with `api-version` and `identifier`, behind a bearer token. Each session
// (identifier) keeps its files in /mnt/data; code runs in a Pyodide interpreter of the stand-in's own.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import busboy from 'busboy';
import { PyodideSandbox } from '../../shared/sandbox/pyodide-sandbox.js';
import { SESSIONS_API_VERSION } from '../../shared/sandbox/sessions-sandbox.js';

export interface SessionsStandIn {
  url: string;
  token: string;
  /** Identifiers that ran code, in order. */
  executions: string[];
  close(): Promise<void>;
}

export async function startSessionsStandIn(options: { timeoutMs?: number } = {}): Promise<SessionsStandIn> {
  const token = 'stand-in-token';
  const sessions = new Map<string, Map<string, Uint8Array>>();
  const filesOf = (identifier: string) => {
    let files = sessions.get(identifier);
    if (!files) sessions.set(identifier, (files = new Map<string, Uint8Array>()));
    return files;
  };
  const executions: string[] = [];
  const python = new PyodideSandbox({
    limits: {
      timeoutMs: options.timeoutMs ?? 60_000,
      memoryBytes: 512 * 2 ** 20,
      scratchBytes: 256 * 2 ** 20,
      outputBytes: 16 * 2 ** 20,
      filesBytes: 32 * 2 ** 20,
    },
    warm: 1,
    concurrency: 4,
  });
  const json = (res: http.ServerResponse, status: number, body: unknown) =>
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  const server = http.createServer((req, res): void => {
    const url = new URL(req.url ?? '/', 'http://stand-in');
    if (req.headers.authorization !== `Bearer ${token}`) return void json(res, 401, { error: 'unauthorized' });
    const identifier = url.searchParams.get('identifier');
    if (url.searchParams.get('api-version') !== SESSIONS_API_VERSION || !identifier)
      return void json(res, 400, { error: 'api-version and identifier are required' });
    const session = filesOf(identifier);
    if (req.method === 'POST' && url.pathname === '/code/execute') {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const { properties } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { properties: { code: string } };
        executions.push(identifier);
        // The session's files are its working directory, /mnt/data; what the code writes there stays.
        const code = `import os\nos.makedirs('/mnt/data', exist_ok=True)\nos.chdir('/mnt/data')\n${properties.code}`;
        const workFiles = [...session].map(([name, bytes]) => ({ name, bytes }));
        const mnt =
          `import os as _o\nfor _n, _b in ` +
          `${JSON.stringify(workFiles.map((f) => [f.name, Buffer.from(f.bytes).toString('base64')]))}:\n    ` +
          `import base64 as _b64\n    open('/mnt/data/' + _n, 'wb').write(_b64.b64decode(_b))\n`;
        const collect =
          `\nimport base64 as _b64c, json as _jc\nprint('\\n<<files>>' + _jc.dumps({_n: ` +
          `_b64c.b64encode(open('/mnt/data/' + _n, 'rb').read()).decode() for _n in ` +
          `os.listdir('/mnt/data')}))\n`;
        python
          .run({
            packageFiles: [],
            workFiles: [],
            task: { code: `import os\nos.makedirs('/mnt/data', exist_ok=True)\n${mnt}${code}${collect}` },
          })
          .then(
            (r) => {
              const at = r.stdout.lastIndexOf('\n<<files>>');
              const kept = JSON.parse(r.stdout.slice(at + '\n<<files>>'.length)) as Record<string, string>;
              for (const [name, b64] of Object.entries(kept)) session.set(name, Buffer.from(b64, 'base64'));
              json(res, 200, {
                $id: '1',
                properties: {
                  $id: '2',
                  status: 'Success',
                  stdout: r.stdout.slice(0, at),
                  stderr: '',
                  result: '',
                  executionTimeInMilliseconds: 1,
                },
              });
            },
            (e: unknown) =>
              json(res, 200, {
                $id: '1',
                properties: {
                  $id: '2',
                  status: 'Failure',
                  stdout: '',
                  stderr: e instanceof Error ? e.message : String(e),
                  result: '',
                  executionTimeInMilliseconds: 1,
                },
              }),
          );
      });
      return;
    }
    if (req.method === 'POST' && url.pathname === '/files/upload') {
      const form = busboy({ headers: req.headers });
      form.on('file', (_field, stream, info) => {
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', () => session.set(info.filename ?? 'file', Buffer.concat(chunks)));
      });
      form.on('close', () => json(res, 200, { $id: '1', value: [] }));
      req.pipe(form);
      return;
    }
    if (req.method === 'GET' && url.pathname === '/files') {
      return void json(res, 200, {
        $id: '1',
        value: [...session].map(([filename, b]) => ({ properties: { filename, size: b.length } })),
      });
    }
    const content = /^\/files\/content\/(.+)$/.exec(url.pathname);
    const name = content?.[1];
    if (req.method === 'GET' && name !== undefined) {
      const bytes = session.get(decodeURIComponent(name));
      if (!bytes) return void json(res, 404, { error: 'no such file' });
      return void res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(Buffer.from(bytes));
    }
    json(res, 404, { error: 'not found' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  // The stand-in's first run makes its interpreter snapshot (seconds): done here, not in a test's deadline.
  await python.run({ packageFiles: [], workFiles: [], task: { code: 'pass' } });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    token,
    executions,
    close: async () => {
      await python.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
