// The portal's development sign-in: a token of the local identity provider for the user named, only while
// the service uses that provider and listens on loopback alone, and only given the sign-in code `npm start`
// prints (derived from the signing key); anywhere else the route is not there.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localSignInCode } from '../../../shared/auth/local-idp.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { INSTANCE } from '../../support/services.js';

/** The sign-in code, computed as the service does: from the signing key in the app's data folder. */
const codeOf = (app: TestApp) => localSignInCode(path.join(app.dataDir, 'local-idp', 'signing-key.json'));

/** As the portal's page signs in: the browser names the page's origin. */
const signIn = (app: TestApp, body: unknown) =>
  fetch(`${app.core}/portal/local-sign-in`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: app.core },
    body: JSON.stringify(body),
  });

describe('development sign-in', () => {
  let local: TestApp;
  let exposed: TestApp;
  beforeAll(async () => {
    local = await startTestApp();
    exposed = await startTestApp({ HOST: '0.0.0.0' });
  });
  afterAll(async () => {
    await local.close();
    await exposed.close();
  });

  it('mints a token for the user named on a loopback-only service, which the APIs accept as that user', async () => {
    const config = (await (await fetch(`${local.core}/portal/config.json`)).json()) as { sign_in: unknown };
    expect(config.sign_in).toEqual({ kind: 'local', development_sign_in: true });
    const r = await signIn(local, { upn: 'dana@contoso.com', name: 'Dana', code: await codeOf(local) });
    expect(r.status).toBe(200);
    const { access_token: token } = (await r.json()) as { access_token: string };
    const sessions = await fetch(`${local.core}/instances/${INSTANCE}/sessions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: '{"name":"mine"}',
    });
    expect(((await sessions.json()) as { upn: string }).upn).toBe('dana@contoso.com');
    expect((await signIn(local, { upn: 'not a user name', code: await codeOf(local) })).status).toBe(400);
  });

  it('mints nothing without the sign-in code, or with a wrong one, and says where the code is', async () => {
    const code = await codeOf(local);
    for (const [given, says] of [
      [undefined, 'needs its sign-in code'],
      ['', 'needs its sign-in code'],
      [`${code.slice(0, -1)}${code.endsWith('A') ? 'B' : 'A'}`, 'sign-in code is wrong'],
      [`${code}x`, 'sign-in code is wrong'],
    ] as const) {
      const r = await signIn(local, { upn: 'owner@local.test', ...(given === undefined ? {} : { code: given }) });
      expect(r.status, String(given)).toBe(403);
      const text = await r.text();
      expect(text).not.toContain('access_token');
      expect((JSON.parse(text) as { error: { message: string } }).error.message).toMatch(
        new RegExp(`${says}.*#sign-in=`),
      );
    }
    // Each data folder has its own key, so its own code: another service's code is no code here.
    expect((await signIn(local, { upn: 'owner@local.test', code: await codeOf(exposed) })).status).toBe(403);
  });

  it('is not there when the service listens beyond loopback, code or not', async () => {
    // Reached on loopback: 0.0.0.0 is where it listens, not a name it answers to.
    const core = exposed.core.replace('0.0.0.0', '127.0.0.1');
    const config = (await (await fetch(`${core}/portal/config.json`)).json()) as { sign_in: unknown };
    expect(config.sign_in).toEqual({ kind: 'local' });
    const r = await signIn({ ...exposed, core }, { upn: 'owner@local.test', code: await codeOf(exposed) });
    expect(r.status).toBe(404);
    expect(JSON.stringify(await r.json())).not.toContain('access_token');
  });
});
