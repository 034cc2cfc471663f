// Users with more groups than a token carries (Entra ID's groups overage): their groups come from a stand-in of
// Graph's transitiveMemberOf over HTTP, page by page (only Graph's own next links followed), are cached, and
// a failing lookup leaves the caller with the token's groups only (what is for everyone), never more.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PrincipalDirectory } from '../../../../shared/auth/directory.js';
import { principalFromClaims } from '../../../../shared/auth/principal.js';

describe('the groups of a token with a groups overage', () => {
  let server: http.Server;
  let base: string;
  const seen: { url: string; authorization: string | undefined }[] = [];
  let failing = false;

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      seen.push({ url: req.url ?? '', authorization: req.headers.authorization });
      if (failing) {
        res.writeHead(503).end();
        return;
      }
      const page = new URL(req.url ?? '/', base).searchParams.get('$skiptoken');
      const body =
        page === null
          ? {
              value: [{ id: 'g-1' }, { id: 'g-2' }],
              '@odata.nextLink': `${base}/v1.0/users/u-1/transitiveMemberOf/microsoft.graph.group?$skiptoken=2`,
            }
          : { value: [{ id: 'g-3' }], '@odata.nextLink': 'https://attacker.example/steal' };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const overage = principalFromClaims({
    oid: 'u-1',
    upn: 'many@example.com',
    _claim_names: { groups: 'src1' },
    _claim_sources: { src1: { endpoint: 'https://graph.windows.net/x' } },
  });
  const errors: unknown[] = [];
  const directory = () =>
    new PrincipalDirectory({} as never, {} as never, {
      graph: { baseUrl: base, getToken: () => Promise.resolve('graph-token') },
      onError: (e) => errors.push(e),
    });

  it('is read from the directory, every page of it, with the service token, and cached', async () => {
    expect(overage?.groupsOverage).toBe(true);
    expect(principalFromClaims({ oid: 'u-2', upn: 'few@example.com', groups: ['g-9'] })?.groupsOverage).toBeUndefined();
    const d = directory();
    expect(await d.readerGroups(overage!)).toEqual(['g-1', 'g-2', 'g-3']);
    expect(seen.map((s) => s.url)).toEqual([
      '/v1.0/users/u-1/transitiveMemberOf/microsoft.graph.group?$select=id&$top=999',
      '/v1.0/users/u-1/transitiveMemberOf/microsoft.graph.group?$skiptoken=2',
    ]);
    expect(seen.every((s) => s.authorization === 'Bearer graph-token')).toBe(true);
    await d.readerGroups(overage!);
    expect(seen).toHaveLength(2);
  });

  it('is the token’s own (none) when the directory fails, and asked again next time', async () => {
    failing = true;
    seen.length = 0;
    const d = directory();
    expect(await d.readerGroups(overage!)).toEqual([]);
    expect(errors.length).toBeGreaterThan(0);
    failing = false;
    expect(await d.readerGroups(overage!)).toEqual(['g-1', 'g-2', 'g-3']);
  });

  it('is the token’s own without Graph, and a token’s groups are taken as they are', async () => {
    const none = new PrincipalDirectory({} as never, {} as never, { onError: () => undefined });
    expect(await none.readerGroups(overage!)).toEqual([]);
    const few = principalFromClaims({ oid: 'u-2', upn: 'few@example.com', groups: ['g-9'] })!;
    expect(await directory().readerGroups(few)).toEqual(['g-9']);
  });
});
