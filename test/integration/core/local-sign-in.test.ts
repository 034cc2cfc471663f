// The portal's development sign-in: a token of the local identity provider for the user named, only while
// the service uses that provider and listens on loopback alone; anywhere else the route is not there.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../support/app.js';
import { INSTANCE } from '../../support/services.js';

/** As the portal's page signs in: the browser names the page's origin. */
const signIn = (app: TestApp, body: unknown) =>
  fetch(`${app.core}/portal/local-sign-in`, { method: 'POST', headers: { 'content-type': 'application/json', origin: app.core }, body: JSON.stringify(body) });

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
    expect(((await (await fetch(`${local.core}/portal/config.json`)).json()) as { sign_in: unknown }).sign_in).toEqual({ kind: 'local', development_sign_in: true });
    const r = await signIn(local, { upn: 'dana@contoso.com', name: 'Dana' });
    expect(r.status).toBe(200);
    const { access_token: token } = (await r.json()) as { access_token: string };
    const sessions = await fetch(`${local.core}/instances/${INSTANCE}/sessions`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: '{"name":"mine"}' });
    expect(((await sessions.json()) as { upn: string }).upn).toBe('dana@contoso.com');
    expect((await signIn(local, { upn: 'not a user name' })).status).toBe(400);
  });

  it('is not there when the service listens beyond loopback', async () => {
    // Reached on loopback: 0.0.0.0 is where it listens, not a name it answers to.
    const core = exposed.core.replace('0.0.0.0', '127.0.0.1');
    expect(((await (await fetch(`${core}/portal/config.json`)).json()) as { sign_in: unknown }).sign_in).toEqual({ kind: 'local' });
    const r = await signIn({ ...exposed, core }, { upn: 'owner@local.test' });
    expect(r.status).toBe(404);
    expect(JSON.stringify(await r.json())).not.toContain('access_token');
  });
});
