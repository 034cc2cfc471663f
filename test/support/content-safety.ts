// A local stand-in for the Azure AI Content Safety REST API (text:shieldPrompt and text:analyze, api-version
// 2024-09-01): a prompt containing "ignore previous instructions" is an attack, a text containing "violent"
// is Violence at severity 6. It records each call and can fail or hang on demand.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ContentSafetyCall {
  path: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: { userPrompt?: string; text?: string };
}

export interface ContentSafetyMock {
  url: string;
  calls: ContentSafetyCall[];
  /** The next calls answer this status (or hang for the ms given) instead. */
  next(...behaviors: ({ status: number } | { hangMs: number })[]): void;
  close(): Promise<void>;
}

export async function startContentSafety(): Promise<ContentSafetyMock> {
  const calls: ContentSafetyCall[] = [];
  const queue: ({ status: number } | { hangMs: number })[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = (req.url ?? '').split('?')[0] ?? '';
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as ContentSafetyCall['body'];
      calls.push({ path, url: req.url ?? '', headers: req.headers, body });
      const answer = () => {
        if (res.destroyed) return;
        if (path.endsWith('/contentsafety/text:shieldPrompt')) {
          const attack = /ignore previous instructions/i.test(body.userPrompt ?? '');
          res
            .writeHead(200, { 'content-type': 'application/json' })
            .end(JSON.stringify({ userPromptAnalysis: { attackDetected: attack }, documentsAnalysis: [] }));
        } else if (path.endsWith('/contentsafety/text:analyze')) {
          const violent = /violent/i.test(body.text ?? '');
          const categories = ['Hate', 'SelfHarm', 'Sexual', 'Violence'].map((category) => ({
            category,
            severity: category === 'Violence' && violent ? 6 : 0,
          }));
          res
            .writeHead(200, { 'content-type': 'application/json' })
            .end(JSON.stringify({ blocklistsMatch: [], categoriesAnalysis: categories }));
        } else res.writeHead(404).end();
      };
      const behavior = queue.shift();
      if (!behavior) answer();
      else if ('status' in behavior)
        res
          .writeHead(behavior.status, { 'content-type': 'application/json' })
          .end('{"error":{"code":"InternalServerError"}}');
      else setTimeout(answer, behavior.hangMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    next: (...behaviors) => queue.push(...behaviors),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
