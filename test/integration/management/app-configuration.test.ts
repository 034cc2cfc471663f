// App configurations are the runtime settings store: a write is effective at once on this instance.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../support/app.js';
import { INSTANCE } from '../../support/services.js';

describe('app configurations as runtime settings', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app.close());

  it('changes branding at once when Svc:Branding:* values are written, and back when deleted', async () => {
    const branding = `${app.core}/instances/${INSTANCE}/branding`;
    const config = (key: string) =>
      `${app.management}/instances/${INSTANCE}/providers/Svc.Configuration/appConfigurations/${key}`;
    expect((await app.call('GET', branding)).body).toMatchObject({ company_name: 'Agent Platform' });
    for (const [key, value] of [
      ['Svc:Branding:CompanyName', 'Contoso'],
      ['Svc:Branding:PrimaryColor', '#112233'],
    ]) {
      expect((await app.call('POST', config(key!), { body: { name: key, key, value } })).status).toBe(200);
    }
    expect((await app.call('GET', branding)).body).toEqual({
      company_name: 'Contoso',
      page_title: 'Agent Platform',
      logo_url: '',
      primary_color: '#112233',
      primary_text_color: '#FFFFFF',
    });
    expect((await app.call('DELETE', config('Svc:Branding:CompanyName'))).status).toBe(200);
    expect((await app.call('GET', branding)).body).toMatchObject({
      company_name: 'Agent Platform',
      primary_color: '#112233',
    });
  });
});
