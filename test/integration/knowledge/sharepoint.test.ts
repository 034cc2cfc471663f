// SharePoint Online sources against a stand-in of the Microsoft Graph endpoints the service calls (site by
// path, the site's drives, delta pages, item permissions, pre-authenticated downloads): the first run lists
// every file of the named library and keeps Graph's delta link; the next reads only what changed and removes
// what Graph reports deleted; each file's permissions decide who retrieves it; the Graph token goes to Graph
// only (never to a download URL or a link outside Graph).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MOCK_EMBEDDING_DIMENSIONS, mockEmbedding, startMockLlm, type MockLlm } from '../../../scripts/mock-llm.js';
import type { GraphOptions } from '../../../shared/auth/graph.js';
import { providers, startTestApp, type TestApp } from '../../support/app.js';
import { TEXTS } from '../../support/documents.js';
import { processPipeline, seedKnowledgeAgent, seedPipeline, upsert } from './support.js';

interface Item {
  id: string;
  name: string;
  folder?: string;
  text?: string;
  deleted?: boolean;
  permissions: unknown[];
}

describe('SharePoint Online data sources', () => {
  let llm: MockLlm;
  let app: TestApp;
  let graph: http.Server;
  let base = '';
  const calls: { path: string; authorization: string | undefined }[] = [];
  const inherited = [
    { id: 'p0', roles: ['read'], grantedToV2: { siteGroup: { id: '3', displayName: 'Docs Members' } } },
  ];
  const files: Item[] = [
    { id: 'item-a', name: 'penguins.txt', text: TEXTS['penguins.txt'], permissions: inherited },
    {
      id: 'item-b',
      name: 'ledger.txt',
      folder: 'Finance',
      text: 'The quarterly ledger of the walrus fund balances at forty thousand.',
      permissions: [{ id: 'p1', roles: ['read'], grantedToV2: { group: { id: 'g-finance', displayName: 'Finance' } } }],
    },
    {
      id: 'item-c',
      name: 'diary.txt',
      text: 'A private diary about emperor penguins kept by one person.',
      permissions: [{ id: 'p2', roles: ['write'], grantedToV2: { user: { id: 'u-1', displayName: 'Ann' } } }],
    },
  ];
  // What the second delta page reports: set by the test before the second run.
  let changes: Item[] = [];

  const item = (i: Item) =>
    i.deleted
      ? { id: i.id, deleted: { state: 'deleted' } }
      : {
          id: i.id,
          name: i.name,
          size: Buffer.byteLength(i.text ?? ''),
          webUrl:
            'https://contoso.sharepoint.com/sites/Docs/Shared%20Documents/' +
            `${i.folder ? `${i.folder}/` : ''}${i.name}`,
          file: { mimeType: 'text/plain' },
          parentReference: { driveId: 'drive-docs', path: `/drives/drive-docs/root:${i.folder ? `/${i.folder}` : ''}` },
          '@microsoft.graph.downloadUrl': `${base}/download/${i.id}`,
        };

  beforeAll(async () => {
    graph = http.createServer((req, res) => {
      const url = new URL(req.url ?? '/', base);
      calls.push({ path: url.pathname + url.search, authorization: req.headers.authorization });
      const send = (body: unknown, status = 200) =>
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      const p = decodeURIComponent(url.pathname);
      if (p === '/v1.0/sites/contoso.sharepoint.com:/sites/Docs')
        return send({ id: 'contoso.sharepoint.com,site-1,web-1' });
      if (p === '/v1.0/sites/contoso.sharepoint.com,site-1,web-1/drives')
        return send({
          value: [
            { id: 'drive-docs', name: 'Documents' },
            { id: 'drive-other', name: 'Other' },
          ],
        });
      if (p === '/v1.0/drives/drive-docs/root/delta') {
        const token = url.searchParams.get('token');
        if (token === null)
          return send({
            value: [{ id: 'root', name: 'root', folder: {} }, item(files[0] as Item)],
            '@odata.nextLink': `${base}/v1.0/drives/drive-docs/root/delta?token=page2`,
          });
        if (token === 'page2')
          return send({
            value: [{ id: 'f1', name: 'Finance', folder: {} }, item(files[1] as Item), item(files[2] as Item)],
            '@odata.deltaLink': `${base}/v1.0/drives/drive-docs/root/delta?token=after-first`,
          });
        if (token === 'after-first')
          return send({
            value: changes.map(item),
            '@odata.deltaLink': `${base}/v1.0/drives/drive-docs/root/delta?token=after-second`,
          });
        return send({ error: { code: 'resyncRequired' } }, 410);
      }
      // The other library tries to send the token elsewhere.
      if (p === '/v1.0/drives/drive-other/root/delta')
        return send({ value: [], '@odata.nextLink': 'https://attacker.example/steal' });
      const permissions = /^\/v1\.0\/drives\/drive-docs\/items\/([^/]+)\/permissions$/.exec(p);
      if (permissions) return send({ value: files.find((f) => f.id === permissions[1])?.permissions ?? [] });
      const download = /^\/download\/(.+)$/.exec(p);
      const file = download && [...changes, ...files].find((f) => f.id === download[1]);
      if (file) return res.writeHead(200, { 'content-type': 'text/plain' }).end(file.text);
      return send({ error: { code: 'itemNotFound' } }, 404);
    });
    await new Promise<void>((r) => graph.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(graph.address() as AddressInfo).port}`;
    llm = await startMockLlm();
    app = await startTestApp({ ALLOW_PRIVATE_NETWORK: 'true' });
    // Graph with a token as the managed identity would get it (the credential gate's audiences are tested on their
    // own).
    (app.services as { graph: GraphOptions | undefined }).graph = {
      baseUrl: base,
      getToken: () => Promise.resolve('graph-token'),
    };
    await seedKnowledgeAgent(app, llm, 'sp-kb');
    await seedPipeline(
      app,
      'sp-kb',
      'intranet',
      {
        data_source_type: 'SharePointOnline',
        site_url: 'https://contoso.sharepoint.com/sites/Docs',
        document_libraries: ['Documents'],
      },
      [],
      'intranet',
    );
  });
  afterAll(async () => {
    await app.close();
    await llm.close();
    graph.close();
  });

  const indexed = async () =>
    Object.fromEntries(
      (await app.services.vectors.documents('intranet')).map((d) => [d.file_name, d.allowed_groups ?? 'everyone']),
    );
  const found = async (readers: string[]) =>
    (
      await app.services.vectors.search(
        'intranet',
        mockEmbedding('penguins ledger diary walrus', MOCK_EMBEDDING_DIMENSIONS),
        10,
        { readers },
      )
    )
      .map((h) => h.file_name)
      .sort();

  it('checks a SharePointOnline source on save: an https site_url, fields of its own type only', async () => {
    for (const [body, message] of [
      [
        {
          data_source_type: 'SharePointOnline',
          site_url: 'http://contoso.sharepoint.com/sites/Docs',
          document_libraries: ['Documents'],
        },
        'must be an https URL',
      ],
      [
        { data_source_type: 'Web', urls: ['https://example.com/'], document_libraries: ['Documents'] },
        'valid only for a SharePointOnline data source',
      ],
    ] as const) {
      const r = await app.call('POST', `${providers(app, 'Svc.DataSource')}/dataSources/refused`, {
        body: { name: 'refused', ...body },
      });
      expect(r.status).toBe(400);
      expect(JSON.stringify(r.body)).toContain(message);
    }
  });

  it('lists every file of the library at first, with the groups its permissions name', async () => {
    const run = await processPipeline(app, 'intranet');
    expect(run).toMatchObject({ status: 'Completed', counts: { documents: 3, added: 3, failed_documents: 0 } });
    expect(await indexed()).toEqual({
      'penguins.txt': 'everyone',
      'ledger.txt': ['g-finance'],
      'diary.txt': ['people-only'],
    });
    const sources = (await app.services.vectors.documents('intranet')).map((d) => d.source).sort();
    expect(sources).toContain(
      'https://contoso.sharepoint.com/sites/Docs/Shared%20Documents/Finance/ledger.txt#item=item-b',
    );
    // Retrieval is trimmed by the files' permissions: the ledger for Finance only, the private diary for no one.
    expect(await found([])).toEqual(['penguins.txt']);
    expect(await found(['g-finance'])).toEqual(['ledger.txt', 'penguins.txt']);
    // The Graph token went to Graph; the downloads (pre-authenticated) got none.
    expect(
      calls.filter((c) => c.path.startsWith('/v1.0/')).every((c) => c.authorization === 'Bearer graph-token'),
    ).toBe(true);
    expect(calls.filter((c) => c.path.startsWith('/download/')).map((c) => c.authorization)).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
  });

  it('reads only what changed on the next run, and removes what Graph reports deleted', async () => {
    changes = [
      { ...(files[0] as Item), text: 'Emperor penguins now also nest on floating ice shelves.' },
      { ...(files[2] as Item), deleted: true },
    ];
    const before = calls.length;
    const run = await processPipeline(app, 'intranet');
    expect(run).toMatchObject({ status: 'Completed', counts: { documents: 1, updated: 1, removed: 1 } });
    expect(await indexed()).toEqual({ 'penguins.txt': 'everyone', 'ledger.txt': ['g-finance'] });
    expect(calls.slice(before).map((c) => c.path)).toContain('/v1.0/drives/drive-docs/root/delta?token=after-first');
    expect(calls.slice(before).some((c) => c.path === '/download/item-b')).toBe(false);
  });

  it('follows no link outside Graph: the run fails saying so, and the token is not sent', async () => {
    await upsert(app, 'Svc.DataSource', 'dataSources', 'intranet-source', {
      data_source_type: 'SharePointOnline',
      site_url: 'https://contoso.sharepoint.com/sites/Docs',
      document_libraries: ['Other'],
    });
    const run = await processPipeline(app, 'intranet');
    expect(run.status).toBe('Failed');
    expect(JSON.stringify(run.errors)).toContain('outside Graph');
    expect(calls.some((c) => c.path.includes('steal'))).toBe(false);
  });
});
