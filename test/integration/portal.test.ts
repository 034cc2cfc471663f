// The portals in a real browser (headless Chromium driven by playwright-core), against the service over
// HTTP with the mock model: sign in, a streamed answer with a citation and token counts, a rating, a file
// upload, a session renamed and deleted, the user's memory imported, exported and cleared (each deletion
// only once confirmed), the sessions paged through; then, as the owner, an agent created, an access token
// issued, its properties edited (a bad one refused with the API's message), a prompt edited from its stored
// definition, one deleted and purged, a data pipeline processed and its run followed to the end, two
// versions of a plugin package uploaded and the first downloaded back from its history, the branding set (a
// bad colour refused with the API's message), completion quotas defined (a duplicate refused with the API's
// message) and enforced, and the Analytics Reader role assigned in the portal's form, then the analytics
// charts. Then how it is used: axe-core's WCAG 2 A/AA rules on the main views, a conversation by keyboard
// alone, the agent's show_* flags and welcome message followed, a phone-sized screen; last, sign-in with
// MSAL. Prints the chat page's first contentful paint and the JavaScript it ships. Chromium: CHROMIUM_PATH,
// else Debian's /usr/bin/chromium (README: `apt-get install chromium`); without one the suite is skipped,
// saying so.
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { build } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../scripts/azurite.js';
import { startMockLlm, type MockLlm } from '../../scripts/mock-llm.js';
import { LOCAL_DEFAULT_USER, localSignInCode } from '../../shared/auth/local-idp.js';
import { ROLE_IDS, roleDefinitionPath } from '../../shared/providers/types/roles.js';
import { providers, startTestApp, type TestApp } from '../support/app.js';
import { INSTANCE } from '../support/services.js';
import { python } from '../support/packages.js';
import {
  processPipeline,
  seedKnowledgeAgent,
  seedPipeline,
  serveDocuments,
  type DocumentServer,
} from './knowledge/support.js';

const BROWSER =
  process.env.CHROMIUM_PATH ??
  ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'].find((p) => existsSync(p));
if (!BROWSER)
  process.stderr.write(
    '\n*** portal browser tests SKIPPED: no Chromium (set CHROMIUM_PATH, or apt-get install chromium) ***\n\n',
  );

/** Where screenshots go: PORTAL_SCREENSHOTS (the README's are made with docs/screenshots), else a temp folder. */
const SHOTS = process.env.PORTAL_SCREENSHOTS ?? path.join(tmpdir(), 'portal-screenshots');

/**
 * The chat portal's link as `npm start` prints it: the sign-in code in its fragment, computed as the
 * service does from the signing key in the app's data folder.
 */
const signInLink = async (app: TestApp) =>
  `${app.core}/portal/#sign-in=${await localSignInCode(path.join(app.dataDir, 'local-idp', 'signing-key.json'))}`;

const PENGUINS = 'Emperor penguins huddle through the Antarctic winter, taking turns at the windy edge of the group.';

describe.skipIf(!BROWSER)('the portals in Chromium', () => {
  let llm: MockLlm;
  let web: DocumentServer;
  let app: TestApp;
  let browser: Browser;
  let page: Page;
  const shot = (name: string) => page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });

  beforeAll(async () => {
    await build({ configFile: 'portal/vite.config.ts' });
    mkdirSync(SHOTS, { recursive: true });
    llm = await startMockLlm();
    web = await serveDocuments();
    web.files.set('/docs/penguins.txt', { bytes: Buffer.from(PENGUINS), type: 'text/plain' });
    app = await startTestApp({
      ALLOW_PRIVATE_NETWORK: 'true',
      CORE_PORT: String(await freePort()),
      MANAGEMENT_PORT: String(await freePort()),
    });
    // Priced (a currency unit per million tokens) and in a cost center: the cost view below charts its calls.
    await seedKnowledgeAgent(app, llm, 'guide', {
      pricing: { input_per_million: 1, output_per_million: 1, currency: 'USD' },
      costCenter: 'field-guides',
    });
    await seedPipeline(
      app,
      'guide',
      'animals',
      { data_source_type: 'Web', urls: [`${web.url}/docs/`] },
      [`${web.url}/docs/penguins.txt`],
      'animals',
    );
    expect((await processPipeline(app, 'animals')).status).toBe('Completed');
    browser = await chromium.launch({
      executablePath: BROWSER,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
      ],
    });
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  }, 120_000);
  afterAll(async () => {
    await browser.close();
    await app.close();
    await web.close();
    await llm.close();
  });

  it('renders the API reference from the OpenAPI documents at /docs, both APIs to pick from', async () => {
    await page.goto(`${app.core}/docs`);
    await page.waitForSelector('.info .title', { timeout: 30_000 });
    expect(await page.textContent('.info .title')).toContain('Core API');
    expect(await page.locator('.opblock').count()).toBeGreaterThan(20);
    expect(await page.locator('option').allTextContents()).toEqual(
      expect.arrayContaining(['Core API', 'Management API']),
    );
  });

  it('without the sign-in code, says where it is and offers no sign-in by name', async () => {
    // A tab of its own (its own storage): the main page's first load stays the one measured below.
    const bare = await browser.newPage();
    try {
      await bare.goto(`${app.core}/portal/`);
      await bare.getByText('open the link npm start printed').waitFor();
      expect(await bare.getByLabel('User name (UPN)').count()).toBe(0);
      expect(await bare.getByLabel(/Token of the local identity provider/).count()).toBe(1);
    } finally {
      await bare.close();
    }
  });

  it('signs in on the development sign-in page by user name through the link npm start prints', async () => {
    await page.goto(await signInLink(app));
    await page.getByLabel('User name (UPN)').waitFor();
    // The code is kept for the tab and taken out of the address bar (and so out of bookmarks and history).
    expect(new URL(page.url()).hash).toBe('');
    await page.getByLabel('User name (UPN)').fill(LOCAL_DEFAULT_USER.upn);
    await page.getByRole('button', { name: 'Continue as this user' }).click();
    await expect.poll(() => page.getByLabel('Agent').inputValue()).toBe('guide');
    const paint = await page.evaluate(() => performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? -1);
    const scripts = await page.evaluate(() =>
      (performance.getEntriesByType('resource') as PerformanceResourceTiming[])
        .filter((r) => r.initiatorType === 'script' || r.name.endsWith('.js'))
        .reduce((n, r) => n + r.transferSize, 0),
    );
    process.stdout.write(
      `chat portal: first contentful paint ${Math.round(paint)} ms; JavaScript shipped ` +
        `${(scripts / 1024).toFixed(1)} KB (gzip, with headers)\n`,
    );
    expect(paint).toBeGreaterThan(0);
    expect(scripts).toBeLessThan(200 * 1024);
  });

  it('streams an answer with its citation and token counts, and records a rating', async () => {
    const streamed = page.waitForResponse((r) => r.url().endsWith('/completions') && r.request().method() === 'POST');
    await page.getByLabel('Message').fill(PENGUINS);
    await page.getByLabel('Message').press('Enter');
    const response = await streamed;
    expect(response.headers()['content-type']).toMatch(/^text\/event-stream/);
    const answer = page.locator('li.message.assistant').last();
    await expect.poll(() => answer.locator('.text').textContent()).toBe(`Echo: ${PENGUINS}`);
    await expect.poll(() => answer.locator('.citations').textContent()).toContain(`${web.url}/docs/penguins.txt`);
    expect(await answer.locator('.tokens').textContent()).toMatch(/^\d+ completion tokens$/);
    await answer.getByRole('button', { name: 'Good answer' }).click();
    await expect
      .poll(() => answer.getByRole('button', { name: 'Good answer' }).getAttribute('aria-pressed'))
      .toBe('true');
    const sessions = await app.call('GET', `${app.core}/instances/${INSTANCE}/sessions`);
    const [session] = sessions.body as { id: string }[];
    const messages = await app.call('GET', `${app.core}/instances/${INSTANCE}/sessions/${session?.id ?? ''}/messages`);
    expect(
      (messages.body as { sender: string; rating?: boolean }[]).find((m) => m.sender === 'Assistant')?.rating,
    ).toBe(true);
  });

  it('uploads a file into the conversation', async () => {
    await page.locator('#upload').setInputFiles({
      name: 'notes.txt',
      mimeType: 'text/plain',
      buffer: Buffer.from('Field notes from the colony.'),
    });
    await expect.poll(() => page.getByRole('list', { name: 'Attached files' }).textContent()).toBe('notes.txt');
    await shot('chat');
    const files = await app.call('GET', `${app.core}/instances/${INSTANCE}/files`);
    expect(JSON.stringify(files.body)).toContain('notes.txt');
  });

  it('previews an attached image; a reloaded conversation shows its sources, scores and stored prompt', async () => {
    const png = Buffer.from(
      '89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489' +
        '0000000d4944415478da63f8ffff3f0005fe02fea7d6a4c40000000049454e44ae426082',
      'hex',
    );
    await page.locator('#upload').setInputFiles({ name: 'dot.png', mimeType: 'image/png', buffer: png });
    await expect.poll(() => page.getByAltText('Preview of dot.png').count()).toBe(1);
    expect(
      await page
        .getByAltText('Preview of dot.png')
        .evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth),
    ).toBe(1);
    await page.reload();
    const conversation = page.getByRole('region', { name: 'Conversation' });
    await page
      .getByRole('region', { name: 'Sessions' })
      .getByRole('button', { name: PENGUINS.slice(0, 60), exact: true })
      .click();
    const answer = conversation.locator('li.message.assistant').first();
    await expect.poll(() => answer.locator('.citations').textContent()).toContain(`${web.url}/docs/penguins.txt`);
    expect(await answer.locator('.citations .score').first().textContent()).toMatch(/^score \d\.\d\d$/);
    expect(await answer.locator('.sender').textContent()).toBe('guide');
    await answer.getByText('View prompt').click();
    const prompt = answer.getByRole('list', { name: 'Prompt sent to the model' });
    await expect.poll(() => prompt.locator('li').count()).toBeGreaterThanOrEqual(3);
    expect(await prompt.textContent()).toContain(PENGUINS);
    expect(await prompt.textContent()).toContain('penguins.txt');
  });

  it('renames a session, and deletes one only once the deletion is confirmed', async () => {
    const sessions = page.getByRole('region', { name: 'Sessions' });
    // A session of its own: the conversation above stays for the analytics below.
    await sessions.getByRole('button', { name: 'New chat' }).click();
    page.once('dialog', (d) => void d.accept('Penguin notes'));
    await sessions.getByRole('button', { name: 'Rename New Chat' }).click();
    await expect.poll(() => sessions.getByRole('list').textContent()).toContain('Penguin notes');
    const names = async () =>
      ((await app.call('GET', `${app.core}/instances/${INSTANCE}/sessions`)).body as { name: string }[]).map(
        (x) => x.name,
      );
    expect(await names()).toContain('Penguin notes');
    page.once('dialog', (d) => void d.dismiss());
    await sessions.getByRole('button', { name: 'Delete Penguin notes' }).click();
    expect(await names()).toContain('Penguin notes');
    page.once('dialog', (d) => void d.accept());
    await sessions.getByRole('button', { name: 'Delete Penguin notes' }).click();
    await expect.poll(names).not.toContain('Penguin notes');
    await expect.poll(() => sessions.getByRole('list').textContent()).not.toContain('Penguin notes');
  });

  it("imports, exports and clears the user's memory, clearing only once confirmed", async () => {
    await page.getByRole('tab', { name: /Memory/ }).click();
    const body = page.locator('pre.memory-body');
    await page.locator('#memory-import').setInputFiles({
      name: 'notes.md',
      mimeType: 'text/markdown',
      buffer: Buffer.from('- Prefers answers about penguins'),
    });
    await expect.poll(() => body.textContent()).toContain('Prefers answers about penguins');
    const download = page.waitForEvent('download');
    await page.getByRole('button', { name: 'Export' }).click();
    const file = await download;
    expect(file.suggestedFilename()).toBe('memory.md');
    expect(readFileSync(await file.path(), 'utf8')).toContain('Prefers answers about penguins');
    page.once('dialog', (d) => void d.dismiss());
    await page.getByRole('button', { name: 'Clear…' }).click();
    expect(await body.textContent()).toContain('Prefers answers about penguins');
    page.once('dialog', (d) => void d.accept());
    await page.getByRole('button', { name: 'Clear…' }).click();
    await expect.poll(() => body.textContent()).toBe('Nothing yet.');
    const memory = await app.call('GET', `${app.core}/instances/${INSTANCE}/memory?scope=user`);
    expect((memory.body as { content_markdown: string }).content_markdown).toBe('');
    await page.getByRole('tab', { name: /Chat/ }).click();
  });

  it('pages through the sessions with More sessions', async () => {
    for (let i = 1; i <= 21; i++)
      expect(
        (await app.call('POST', `${app.core}/instances/${INSTANCE}/sessions`, { body: { name: `Old ${i}` } })).status,
      ).toBe(200);
    const sessions = page.getByRole('region', { name: 'Sessions' });
    // A new chat reloads the list: the first page, 20 sessions, most recently active first.
    await sessions.getByRole('button', { name: 'New chat' }).click();
    const items = sessions.getByRole('listitem');
    await expect.poll(() => items.count()).toBe(20);
    await sessions.getByRole('button', { name: 'More sessions' }).click();
    // 21 old ones, the conversation above and the new chat: 23 in all, each once.
    await expect.poll(() => items.count()).toBe(23);
    const names = await sessions.getByRole('list').locator('li > button.link').allTextContents();
    expect(new Set(names).size).toBe(23);
    expect(names).toEqual(expect.arrayContaining(Array.from({ length: 21 }, (_, i) => `Old ${i + 1}`)));
    expect(await sessions.getByRole('button', { name: 'More sessions' }).count()).toBe(0);
  });

  it('renders answers as Markdown with code blocks, never running what they hold', async () => {
    await page.getByRole('button', { name: 'New chat', exact: true }).click();
    const hostile =
      'Here is **bold**, `code`, <img src=x onerror="window.pwned=1"> [a link](javascript:window.pwned=2) and ' +
      '[docs](https://example.com/docs)\n\n```\nconst x = 1;\n```';
    await page.getByLabel('Message').fill(hostile);
    await page.getByLabel('Message').press('Enter');
    const answer = page.getByRole('region', { name: 'Conversation' }).locator('li.message.assistant').last();
    await expect.poll(() => answer.locator('pre code').textContent()).toBe('const x = 1;\n');
    expect(await answer.locator('strong').textContent()).toBe('bold');
    expect(await answer.locator('img').count()).toBe(0);
    expect(
      await answer
        .locator('a')
        .evaluateAll((links: HTMLAnchorElement[]) => links.map((a) => [a.getAttribute('href'), a.rel, a.target])),
    ).toEqual([
      ['', 'noopener noreferrer', '_blank'],
      ['https://example.com/docs', 'noopener noreferrer', '_blank'],
    ]);
    expect(await page.evaluate(() => (window as { pwned?: number }).pwned)).toBeUndefined();
  });

  it('resumes a dropped stream where it was (Last-Event-ID), without repeating text', async () => {
    const prompt = Array.from({ length: 24 }, (_, i) => `stone${i}`).join(' ');
    // The network drops the first connection after three events; the answer goes on on the service.
    await page.route('**/completions', async (route) => {
      if (route.request().method() !== 'POST') return route.continue();
      const response = await route.fetch();
      const events = (await response.text()).split('\n\n').slice(0, 3).join('\n\n') + '\n\n';
      await route.fulfill({ status: 200, headers: response.headers(), body: events });
    });
    const replays: string[] = [];
    page.on('request', (r) => r.url().endsWith('/stream') && replays.push(r.headers()['last-event-id'] ?? ''));
    try {
      await page.getByLabel('Message').fill(prompt);
      await page.getByLabel('Message').press('Enter');
      const answer = page.getByRole('region', { name: 'Conversation' }).locator('li.message.assistant').last();
      await expect.poll(() => answer.locator('.text').textContent(), { timeout: 15_000 }).toBe(`Echo: ${prompt}`);
      expect(replays).toEqual(['3']);
    } finally {
      await page.unroute('**/completions');
    }
  });

  it('stops an answer with Stop: the stream is cancelled and the turn is not kept', async () => {
    await page.getByRole('button', { name: 'New chat', exact: true }).click();
    llm.setStreaming(100, 10_000);
    try {
      await page.getByLabel('Message').fill(Array.from({ length: 60 }, (_, i) => `slow${i}`).join(' '));
      await page.getByLabel('Message').press('Enter');
      const stop = page.getByRole('button', { name: 'Stop' });
      await expect.poll(() => stop.isEnabled()).toBe(true);
      await expect.poll(() => page.locator('li.message.assistant.streaming .text').textContent()).toMatch(/^Echo/);
      await stop.click();
      await expect.poll(() => page.getByRole('status').textContent()).toContain('Stopped');
      const [session] = (await app.call('GET', `${app.core}/instances/${INSTANCE}/sessions`)).body as { id: string }[];
      expect(
        (await app.call('GET', `${app.core}/instances/${INSTANCE}/sessions/${session?.id ?? ''}/messages`)).body,
      ).toEqual([]);
    } finally {
      llm.setStreaming(0, 0);
    }
  });

  it('creates an agent and issues an access token that the Core API accepts', async () => {
    const guide = await app.call('GET', `${providers(app, 'Svc.Agent')}/agents/guide`);
    const { workflow_object_id } = (guide.body as { resource: { workflow_object_id: string } }).resource;
    await page.goto(`${app.core}/portal/manage.html#agents`);
    await page.getByRole('button', { name: 'New agent', exact: true }).click();
    await page.getByLabel('Name', { exact: true }).fill('concierge');
    // The fields write into the JSON definition, which is what is sent.
    await page.getByLabel('Display name').fill('Concierge');
    await page.getByLabel('Workflow').selectOption({ label: 'guide-workflow' });
    expect(JSON.parse(await page.getByLabel('Definition (JSON)').inputValue())).toEqual({
      display_name: 'Concierge',
      workflow_object_id,
    });
    await page.getByRole('button', { name: 'Save' }).click();
    const row = page.getByRole('row').filter({ hasText: 'concierge' });
    await row.getByRole('button', { name: 'Properties and tokens' }).click();
    await page.getByLabel('Token name').fill('kiosk');
    await page.getByRole('button', { name: 'Issue token' }).click();
    const secret = (await page.locator('.token-secret').textContent()) ?? '';
    await shot('manage-agent');
    const r = await fetch(`${app.core}/instances/${INSTANCE}/branding`, {
      headers: { 'x-agent-access-token': secret },
    });
    expect(r.status).toBe(200);
    // The list reloads after the secret shows.
    await expect.poll(() => page.getByRole('listitem').filter({ hasText: 'kiosk' }).count()).toBe(1);
    // Switched off and on again from the list; its last use is shown.
    await page.getByRole('button', { name: 'Deactivate kiosk' }).click();
    await expect
      .poll(() => page.getByRole('listitem').filter({ hasText: 'kiosk' }).textContent())
      .toMatch(/\(deactivated\).*last used/);
    expect(
      (await fetch(`${app.core}/instances/${INSTANCE}/branding`, { headers: { 'x-agent-access-token': secret } }))
        .status,
    ).toBe(401);
    await page.getByRole('button', { name: 'Activate kiosk' }).click();
    await page.getByRole('button', { name: 'Deactivate kiosk' }).waitFor();
    expect(
      (await fetch(`${app.core}/instances/${INSTANCE}/branding`, { headers: { 'x-agent-access-token': secret } }))
        .status,
    ).toBe(200);
  });

  it(
    "edits an agent's properties in fields: settings as forms with their links picked by name, the owner found " +
      "by name, and the API's message for a bad one",
    async () => {
      const form = page.locator('form.properties');
      const properties = async () =>
        (
          (
            await app.call('POST', `${providers(app, 'Svc.Agent')}/agents/concierge/get-properties`, {
              body: {
                property_names: [
                  'cost_center',
                  'conversation_history_settings',
                  'text_rewrite_settings',
                  'show_file_upload',
                  'owner_user_id',
                ],
              },
            })
          ).body as { resource: { properties: Record<string, unknown> } }
        ).resource.properties;
      await form.getByLabel('Cost center').fill('Research');
      await form.getByLabel('Conversation history').check();
      await form.getByLabel('Turns sent (max_history)').fill('3');
      await form.getByLabel('file upload').uncheck();
      await form.getByRole('button', { name: 'Save properties' }).click();
      await form.getByRole('status').waitFor();
      expect(await properties()).toMatchObject({
        cost_center: 'Research',
        conversation_history_settings: { enabled: true, max_history: 3 },
        show_file_upload: false,
      });
      // Turned on without the model and prompt it needs: the API refuses it, the form says why, nothing is stored.
      await form.getByLabel('Prompt rewrite').check();
      await form.getByRole('button', { name: 'Save properties' }).click();
      await expect.poll(() => form.getByRole('alert').textContent()).toMatch(/text_rewrite_settings/);
      expect((await properties()).text_rewrite_settings).toBeNull();
      // Picked by name from the models and prompts there are.
      await form.getByLabel('Rewrite model (a completion model)').selectOption({ label: 'guide-model' });
      await form.getByLabel('Rewrite prompt').selectOption({ label: 'guide-prompt' });
      // The owner, found by name through the identity search (Dana has called the API, so the directory knows her).
      const dana = (
        (await app.call('GET', `${app.management}/instances/${INSTANCE}/identity`, { as: 'dana@example.com' }))
          .body as {
          id: string;
        }
      ).id;
      await form.getByLabel('Find a user by name, UPN or id').fill('dana');
      await form.getByRole('button', { name: 'Search' }).click();
      await form.getByRole('button', { name: /Make .*dana.* the owner/i }).click();
      await form.getByRole('button', { name: 'Save properties' }).click();
      await expect.poll(async () => (await properties()).owner_user_id).toBe(dana);
      expect((await properties()).text_rewrite_settings).toEqual({
        user_prompt_rewrite_enabled: true,
        user_prompt_rewrite_settings: {
          user_prompt_rewrite_ai_model_object_id: expect.stringMatching(/aiModels\/guide-model$/) as string,
          user_prompt_rewrite_prompt_object_id: expect.stringMatching(/prompts\/guide-prompt$/) as string,
          user_prompts_window_size: 3,
        },
      });
      // Turned off again: the setting is cleared (null), and the agent answers without a rewrite.
      await form.getByLabel('Prompt rewrite').uncheck();
      await form.getByRole('button', { name: 'Save properties' }).click();
      await expect.poll(async () => (await properties()).text_rewrite_settings).toBeNull();
    },
  );

  it(
    'edits a prompt in its fields and its JSON, from its whole stored definition, not the summary the list ' + 'shows',
    async () => {
      const prompt = async () =>
        (
          (await app.call('GET', `${providers(app, 'Svc.Prompt')}/prompts/guide-prompt`)).body as {
            resource: Record<string, unknown>;
          }
        ).resource;
      const before = await prompt();
      await page.goto(`${app.core}/portal/manage.html#prompts`);
      await page.getByRole('row').filter({ hasText: 'guide-prompt' }).getByRole('button', { name: 'Edit' }).click();
      const json = page.getByLabel('Definition (JSON)');
      const prefix = page.getByLabel('Prefix (the system prompt)');
      await expect.poll(() => prefix.inputValue()).toBe(String(before.prefix));
      expect(Object.keys(JSON.parse(await json.inputValue()) as object)).not.toContain('created_on');
      // Typed into the field, line by line (a trailing newline stays while typing); a change in the JSON shows in the
      // field.
      await prefix.fill('');
      await prefix.pressSequentially('You guide visitors\nthrough the penguin house.\n');
      expect(await prefix.inputValue()).toBe('You guide visitors\nthrough the penguin house.\n');
      await page.getByLabel('Category').fill('Zoo');
      const definition = JSON.parse(await json.inputValue()) as Record<string, unknown>;
      expect(definition).toMatchObject({ prefix: 'You guide visitors\nthrough the penguin house.\n', category: 'Zoo' });
      await json.fill(JSON.stringify({ ...definition, category: undefined, suffix: 'Answer briefly.' }));
      expect(await page.getByLabel('Suffix').inputValue()).toBe('Answer briefly.');
      expect(await page.getByLabel('Category').inputValue()).toBe('');
      await shot('manage-prompt');
      await page.getByRole('button', { name: 'Save' }).click();
      await page.getByRole('button', { name: 'New prompt' }).waitFor();
      const after = await prompt();
      expect(after).toEqual({
        ...before,
        prefix: 'You guide visitors\nthrough the penguin house.\n',
        suffix: 'Answer briefly.',
        updated_on: after.updated_on,
        version: (before.version as number) + 1,
      });
    },
  );

  it("shows a prompt's history with the fields two versions differ in, and restores the first version", async () => {
    const prompt = async () =>
      (
        (await app.call('GET', `${providers(app, 'Svc.Prompt')}/prompts/guide-prompt`)).body as {
          resource: Record<string, unknown>;
        }
      ).resource;
    const first = (
      (await app.call('GET', `${providers(app, 'Svc.Prompt')}/prompts/guide-prompt/versions/1`)).body as {
        resource: Record<string, unknown>;
      }
    ).resource;
    await page.goto(`${app.core}/portal/manage.html#prompts`);
    await page
      .getByRole('row')
      .filter({ hasText: 'guide-prompt' })
      .getByRole('button', { name: 'History of guide-prompt' })
      .click();
    const history = page.getByRole('region', { name: 'History of guide-prompt' });
    await expect
      .poll(() => history.getByRole('row').filter({ hasText: '(current)' }).count(), { timeout: 10_000 })
      .toBe(1);
    const diff = history.getByRole('table', { name: 'Differences between version 1 and version 2' });
    await expect
      .poll(() => diff.getByRole('rowheader').allTextContents(), { timeout: 10_000 })
      .toEqual(['prefix', 'suffix']);
    expect(await diff.getByRole('row').filter({ hasText: 'prefix' }).textContent()).toContain(
      'through the penguin house.',
    );
    await shot('manage-history');
    page.once('dialog', (d) => void d.accept());
    await history.getByRole('button', { name: 'Restore version 1' }).click();
    await expect.poll(async () => (await prompt()).version, { timeout: 10_000 }).toBe(3);
    const restored = await prompt();
    expect(restored.prefix).toBe(first.prefix);
    expect(restored.suffix).toBe(first.suffix);
    await expect
      .poll(() => history.getByRole('row').filter({ hasText: '3 (current)' }).count(), { timeout: 10_000 })
      .toBe(1);
  });

  it('creates an agent from a template in its parameters, showing the API message for one it refuses', async () => {
    const model = `/instances/${INSTANCE}/providers/Svc.AIModel/aiModels/guide-model`;
    await page.goto(`${app.core}/portal/manage.html#agents`);
    await page.getByRole('button', { name: 'New agent from template' }).click();
    await page.getByLabel('Template').selectOption({ label: 'Tool-using agent over an MCP server' });
    await page.getByLabel('agent_name').fill('helper');
    await page.getByLabel('completion_model_object_id').fill(model);
    await page.getByLabel('allowed_tools').fill('add\nrepeat');
    await page.getByRole('button', { name: 'Create agent' }).click();
    await expect.poll(() => page.locator('form.editor .error').textContent(), { timeout: 10_000 }).toContain('mcp_url');
    expect((await app.call('GET', `${providers(app, 'Svc.Agent')}/agents/helper`)).status).toBe(404);
    await page.getByLabel('mcp_url').fill('http://127.0.0.1:9/mcp');
    await shot('manage-template');
    await page.getByRole('button', { name: 'Create agent' }).click();
    await expect
      .poll(() => page.getByRole('status').textContent(), { timeout: 10_000 })
      .toContain('Created 4 resources');
    const helper = await app.call('GET', `${providers(app, 'Svc.Agent')}/agents/helper`);
    expect((helper.body as { roles: string[] }).roles).toContain('Owner');
    const tool = await app.call('GET', `${providers(app, 'Svc.Agent')}/tools/helper-tools`);
    expect(tool.body).toMatchObject({ resource: { allowed_tools: ['add', 'repeat'], url: 'http://127.0.0.1:9/mcp' } });
  });

  it(
    "runs an agent's evaluation twice and shows the runs side by side by agent version; a shared thumbs-down " +
      'becomes a case',
    async () => {
      const agentPath = `${providers(app, 'Svc.Agent')}/agents/guide`;
      const cases = [
        { user_prompt: 'Tell me about penguins', expect: { contains: 'penguins' } },
        { user_prompt: 'Tell me about seals', expect: { contains: 'walrus' } },
      ];
      expect(
        (await app.call('POST', `${agentPath}/evaluations/animals`, { body: { name: 'animals', cases } })).status,
      ).toBe(200);
      // A user's thumbs-down, shared with the owner: the prompt becomes a candidate case.
      await page.goto(`${app.core}/portal/`);
      await page.getByLabel('Agent').selectOption('guide');
      await page.getByLabel('Message').fill('Where do penguins sleep?');
      await page.getByLabel('Message').press('Enter');
      const answer = page.locator('li.message.assistant').last();
      await expect
        .poll(() => answer.locator('.text').textContent(), { timeout: 10_000 })
        .toBe('Echo: Where do penguins sleep?');
      await answer.getByRole('button', { name: 'Bad answer' }).click();
      await answer.getByRole('button', { name: "Share this prompt with the agent's owner to improve it" }).click();
      await expect
        .poll(() => answer.getByRole('button', { name: "Prompt shared with the agent's owner" }).count(), {
          timeout: 10_000,
        })
        .toBe(1);

      await page.goto(`${app.core}/portal/manage.html#agents`);
      await page
        .getByRole('row')
        .filter({ hasText: /^guide/ })
        .first()
        .getByRole('button', { name: 'Properties and tokens' })
        .click();
      const panel = page.getByRole('region', { name: 'Evaluations of guide' });
      await panel.getByRole('button', { name: 'Run animals' }).click();
      const runs = panel.getByRole('table', { name: 'Runs of animals' });
      await expect
        .poll(() => runs.getByRole('row').filter({ hasText: 'Completed' }).count(), { timeout: 30_000 })
        .toBe(1);
      const guide = ((await app.call('GET', agentPath)).body as { resource: Record<string, unknown> }).resource;
      expect((await app.call('POST', agentPath, { body: { ...guide, description: 'A changed guide' } })).status).toBe(
        200,
      );
      await panel.getByRole('button', { name: 'Run animals' }).click();
      await expect
        .poll(() => runs.getByRole('row').filter({ hasText: 'Completed' }).count(), { timeout: 30_000 })
        .toBe(2);
      for (const box of await runs.getByRole('checkbox').all()) await box.check();
      const sideBySide = panel.getByRole('table', { name: 'Runs side by side' });
      const headers = await sideBySide.getByRole('columnheader').allTextContents();
      const version = guide.version as number;
      expect(headers).toEqual(['Prompt', `Agent version ${version + 1} (50%)`, `Agent version ${version} (50%)`]);
      expect(await sideBySide.getByRole('row').filter({ hasText: 'Tell me about seals' }).textContent()).toContain(
        'the answer does not contain "walrus"',
      );
      await shot('manage-evaluations');

      const shared = panel.getByRole('region', { name: 'Shared prompts' });
      expect(await shared.locator('blockquote').textContent()).toBe('Where do penguins sleep?');
      await shared.getByLabel('A good answer contains').fill('sleep');
      await shared.getByRole('button', { name: 'Add as case' }).click();
      await expect.poll(() => shared.count(), { timeout: 10_000 }).toBe(0);
      const evaluation = await app.call('GET', `${agentPath}/evaluations/animals`);
      expect((evaluation.body as { cases: unknown[] }).cases).toContainEqual({
        user_prompt: 'Where do penguins sleep?',
        expect: { contains: 'sleep' },
      });
    },
  );

  it('deletes a prompt, lists it again with Show deleted, and purges it so its name can be used again', async () => {
    const url = `${providers(app, 'Svc.Prompt')}/prompts/scratch`;
    await page.goto(`${app.core}/portal/manage.html#prompts`);
    const create = async () => {
      await page.getByRole('button', { name: 'New prompt' }).click();
      await page.getByLabel('Name', { exact: true }).fill('scratch');
      await page.getByLabel('Prefix (the system prompt)').fill('A prompt to throw away.');
      await page.getByRole('button', { name: 'Save' }).click();
    };
    await create();
    const row = page.getByRole('row').filter({ hasText: 'scratch' });
    page.once('dialog', (d) => void d.accept());
    await row.getByRole('button', { name: 'Delete' }).click();
    await expect.poll(() => row.count()).toBe(0);
    expect((await app.call('GET', url)).body).toMatchObject({ resource: { deleted: true } });
    // Its name is taken until it is purged: the API says so, and the form shows it.
    await create();
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/scratch is deleted; purge it/);
    await page.getByRole('button', { name: 'Cancel' }).click();
    await page.getByLabel('Show deleted').check();
    await expect.poll(() => row.textContent()).toMatch(/^scratch\s*Deleted\s*Purge$/);
    page.once('dialog', (d) => void d.dismiss());
    await row.getByRole('button', { name: 'Purge scratch' }).click();
    expect((await app.call('GET', url)).status).toBe(200);
    page.once('dialog', (d) => void d.accept());
    await row.getByRole('button', { name: 'Purge scratch' }).click();
    await expect.poll(() => row.count()).toBe(0);
    expect((await app.call('GET', url)).status).toBe(404);
    await page.getByLabel('Show deleted').uncheck();
    await create();
    await expect.poll(() => row.textContent()).toMatch(/^scratch/);
    expect((await app.call('GET', url)).body).toMatchObject({
      resource: { prefix: 'A prompt to throw away.', deleted: false },
    });
  });

  it('processes a data pipeline and shows the run finish with its counts', async () => {
    const before = await app.call('GET', `${providers(app, 'Svc.DataPipeline')}/dataPipelineRuns`);
    await page.goto(`${app.core}/portal/manage.html#pipelines`);
    await page.getByRole('button', { name: 'Process animals' }).click();
    const runs = page.getByRole('region', { name: 'Pipeline runs' }).getByRole('row');
    // The header row, the run of beforeAll and the new one, which the table follows until it completes.
    await expect.poll(() => runs.count()).toBe((before.body as unknown[]).length + 2);
    await expect
      .poll(() => runs.nth(1).textContent(), { timeout: 20_000 })
      .toMatch(/animals\s*Completed\s*1 documents, 1 partitions, 0 failed/);
    await shot('manage-pipelines');
  });

  it(
    'creates a code interpreter tool in the Tools form, attaches it to an agent by its checkbox, and shows the ' +
      'image the code writes inline',
    async () => {
      const guide = (
        (await app.call('GET', `${providers(app, 'Svc.Agent')}/agents/guide`)).body as {
          resource: { workflow_object_id: string };
        }
      ).resource;
      expect(
        (
          await app.call('POST', `${providers(app, 'Svc.Agent')}/agents/analyst`, {
            body: { name: 'analyst', workflow_object_id: guide.workflow_object_id },
          })
        ).status,
      ).toBe(200);
      await page.goto(`${app.core}/portal/manage.html#tools`);
      await page.getByRole('button', { name: 'New tool' }).click();
      await page.getByLabel('Name', { exact: true }).fill('interpreter');
      await page.getByLabel('Tool type').selectOption('code-interpreter');
      // Only the fields of the chosen type show.
      expect(await page.getByLabel('Server URL (streamable HTTP, or platform://memory)').count()).toBe(0);
      await page.getByRole('button', { name: 'Save' }).click();
      await page.getByRole('row').filter({ hasText: 'interpreter' }).waitFor();
      await page.goto(`${app.core}/portal/manage.html#agents`);
      await page.getByRole('row').filter({ hasText: 'analyst' }).getByRole('button', { name: 'Edit' }).click();
      await page.getByRole('group', { name: 'Tools' }).getByLabel('interpreter').check();
      await page.getByRole('button', { name: 'Save' }).click();
      await expect
        .poll(
          async () =>
            (
              (await app.call('GET', `${providers(app, 'Svc.Agent')}/agents/analyst`)).body as {
                resource: { tool_object_ids?: string[] };
              }
            ).resource.tool_object_ids,
        )
        .toEqual([`/instances/${INSTANCE}/providers/Svc.Agent/tools/interpreter`]);
      const draw = [
        'import struct, zlib',
        'w, h, heights = 240, 120, [40, 100, 70]',
        'def pixel(x, y):',
        '    inside = 16 <= x % 80 < 64 and h - y <= heights[x // 80]',
        '    return (40, 110, 200) if inside else (255, 255, 255)',
        "raw = b''.join(b'\\x00' + bytes(c for x in range(w) for c in pixel(x, y)) for y in range(h))",
        "chunk = lambda t, d: struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)",
        "png = b'\\x89PNG\\r\\n\\x1a\\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 2, 0, 0, 0)) + " +
          "chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b'')",
        "open('chart.png', 'wb').write(png)",
        "print('drew chart.png')",
      ].join('\n');
      llm.next({ toolCalls: [{ name: 'python', arguments: { code: draw } }] });
      await page.goto(`${app.core}/portal/`);
      await page.getByLabel('Agent').selectOption('analyst');
      await page.getByRole('button', { name: 'New chat', exact: true }).click();
      await page.getByLabel('Message').fill('Draw me a chart');
      await page.getByLabel('Message').press('Enter');
      const answer = page.getByRole('region', { name: 'Conversation' }).locator('li.message.assistant').last();
      await expect
        .poll(() => answer.locator('.text').textContent(), { timeout: 30_000 })
        .toMatch(/^Tools said: drew chart\.png/);
      const image = answer.getByAltText('chart.png');
      await expect
        .poll(() => image.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth), { timeout: 10_000 })
        .toBe(240);
      expect(await answer.getByRole('link', { name: 'chart.png' }).getAttribute('download')).toBe('chart.png');
      await shot('chat-code-interpreter');
    },
  );

  it('uploads two versions of a plugin package and downloads the first one back from its version history', async () => {
    const first = await python('1.0.0');
    await page.goto(`${app.core}/portal/manage.html#packages`);
    await page.getByLabel('Name', { exact: true }).fill('acctools');
    for (const [version, bytes] of [
      ['1.0.0', first],
      ['1.1.0', await python('1.1.0')],
    ] as const) {
      await page.getByLabel('Version', { exact: true }).fill(version);
      await page
        .locator('#pkg-file')
        .setInputFiles({ name: `acctools-${version}.zip`, mimeType: 'application/zip', buffer: bytes });
      await expect
        .poll(() => page.getByRole('row').filter({ hasText: 'Python-acctools' }).first().textContent())
        .toContain(version);
    }
    const history = page.getByRole('region', { name: 'Versions of Python-acctools' });
    const rows = history.getByRole('row');
    await expect.poll(() => rows.count()).toBe(3);
    expect(await rows.nth(1).textContent()).toMatch(/^1\.1\.0 \(current\)/);
    expect(await rows.nth(2).textContent()).toMatch(/^1\.0\.0/);
    expect(await history.textContent()).toContain('Plugins of the current version: echo, planner');
    const download = page.waitForEvent('download');
    await history.getByRole('button', { name: 'Download Python-acctools 1.0.0' }).click();
    const file = await download;
    expect(readFileSync(await file.path()).equals(first)).toBe(true);
    await shot('manage-packages');
  });

  it("sets the branding, showing the API's message for a colour it refuses", async () => {
    const branding = async () =>
      (await app.call('GET', `${app.core}/instances/${INSTANCE}/branding`)).body as Record<string, string>;
    await page.goto(`${app.core}/portal/manage.html#appConfig`);
    const form = page.getByRole('form', { name: 'Branding' });
    await form.getByLabel('Company name').fill('Penguin Works');
    await form.getByLabel('Primary colour (a CSS colour)').fill('not-a-colour');
    await form.getByRole('button', { name: 'Save branding' }).click();
    await expect.poll(() => form.getByRole('alert').textContent()).toContain('must be a CSS colour');
    expect(await branding()).toMatchObject({ company_name: 'Penguin Works', primary_color: '#0F6CBD' });
    await form.getByLabel('Primary colour (a CSS colour)').fill('#123456');
    await form.getByRole('button', { name: 'Save branding' }).click();
    await form.getByRole('status').waitFor();
    expect(await branding()).toMatchObject({ company_name: 'Penguin Works', primary_color: '#123456' });
    await expect.poll(() => page.getByRole('row').filter({ hasText: 'Svc:Branding:PrimaryColor' }).count()).toBe(1);
  });

  it("defines completion quotas, shows the API's message for a refused one; the Core API enforces them", async () => {
    const stored = async () =>
      (await app.call('GET', `${providers(app, 'Svc.Configuration')}/appConfigurations/Svc:Quota:Definitions`))
        .body as { resource?: { value: string } };
    await page.goto(`${app.core}/portal/manage.html#appConfig`);
    const form = page.getByRole('form', { name: 'Quotas' });
    await form.getByText('No quotas: completions are not limited.').waitFor();
    await form.getByRole('button', { name: 'Add quota' }).click();
    const first = form.getByRole('group', { name: 'Quota 1' });
    await first.getByLabel('Name').fill('GuideHourly');
    await first.getByLabel('Applies to').selectOption({ label: 'Agent guide' });
    await first.getByLabel('Limit').fill('100');
    await first.getByLabel('Window (seconds)').fill('3600');
    // A second quota under the same name: the API refuses the list, the form says why, nothing is stored.
    await form.getByRole('button', { name: 'Add quota' }).click();
    await form.getByRole('group', { name: 'Quota 2' }).getByLabel('Name').fill('GuideHourly');
    await form.getByRole('button', { name: 'Save quotas' }).click();
    await expect.poll(() => form.getByRole('alert').textContent()).toContain('defines the quota GuideHourly twice');
    expect((await stored()).resource).toBeUndefined();
    await form.getByRole('button', { name: 'Remove quota 2' }).click();
    await form.getByRole('button', { name: 'Save quotas' }).click();
    await form.getByRole('status').waitFor();
    expect(JSON.parse((await stored()).resource?.value ?? '[]')).toEqual([
      {
        name: 'GuideHourly',
        context: 'CoreAPI:Completions:guide',
        metric: 'requests',
        metric_partition: 'UserPrincipalName',
        metric_limit: 100,
        metric_window_seconds: 3600,
        lockout_duration_seconds: 0,
      },
    ]);
    const answer = await app.call('POST', `${app.core}/instances/${INSTANCE}/completions`, {
      body: { user_prompt: 'How do penguins keep warm?', agent_name: 'guide' },
    });
    expect(answer.headers.get('ratelimit-policy')).toBe('"GuideHourly";q=100;w=3600');
    await shot('manage-config');
    // Reloaded, the form shows what is stored; removing the last quota lifts the limit.
    await page.reload();
    await expect.poll(() => form.getByRole('group').count()).toBe(1);
    await form.getByRole('button', { name: 'Remove quota 1' }).click();
    await form.getByRole('button', { name: 'Save quotas' }).click();
    await form.getByText('No quotas: completions are not limited.').waitFor();
    expect((await stored()).resource?.value).toBe('[]');
  });

  it("defines budgets, showing the API's message for one it refuses, and the Core API holds them", async () => {
    const stored = async () =>
      (await app.call('GET', `${providers(app, 'Svc.Configuration')}/appConfigurations/Svc:Budgets`)).body as {
        resource?: { value: string };
      };
    await page.goto(`${app.core}/portal/manage.html#appConfig`);
    const form = page.getByRole('form', { name: 'Budgets' });
    await form.getByText('No budgets: spend is not capped.').waitFor();
    await form.getByRole('button', { name: 'Add budget' }).click();
    const first = form.getByRole('group', { name: 'Budget 1' });
    await first.getByLabel('Name').fill('guides-monthly');
    await first.getByLabel('Caps').selectOption({ label: 'one cost center' });
    await first.getByLabel('Cost center').fill('field-guides');
    await first.getByLabel('Limit').fill('50');
    await first.getByLabel('Currency').fill('usd');
    // A currency that is not an ISO code: the API refuses the list, the form says why, nothing is stored.
    await form.getByRole('button', { name: 'Add budget' }).click();
    const second = form.getByRole('group', { name: 'Budget 2' });
    await second.getByLabel('Name').fill('per-person');
    await second.getByLabel('Caps').selectOption({ label: 'each user' });
    await second.getByLabel('Agent').selectOption({ label: 'guide' });
    await second.getByLabel('Per').selectOption({ label: 'day (UTC)' });
    await second.getByLabel('Currency').fill('US');
    await form.getByRole('button', { name: 'Save budgets' }).click();
    await expect.poll(() => form.getByRole('alert').textContent()).toContain('currency');
    expect((await stored()).resource).toBeUndefined();
    await second.getByLabel('Currency').fill('USD');
    await form.getByRole('button', { name: 'Save budgets' }).click();
    await form.getByRole('status').waitFor();
    expect(JSON.parse((await stored()).resource?.value ?? '[]')).toEqual([
      {
        name: 'guides-monthly',
        scope: 'cost_center',
        cost_center: 'field-guides',
        limit: 50,
        currency: 'USD',
        period: 'month',
      },
      { name: 'per-person', scope: 'user', agent_name: 'guide', limit: 100, currency: 'USD', period: 'day' },
    ]);
    const answer = await app.call('POST', `${app.core}/instances/${INSTANCE}/completions`, {
      body: { user_prompt: 'How do penguins keep warm?', agent_name: 'guide' },
    });
    expect(answer.headers.get('svc-budget')).toMatch(/^"(guides-monthly|per-person)";remaining=\d/);
  });

  it('assigns the Analytics Reader role in the portal, and then shows the analytics charts', async () => {
    await page.goto(`${app.core}/portal/manage.html#roleAssignments`);
    await page.getByRole('button', { name: 'New role assignment' }).click();
    await page.getByLabel('Principal (object id)').fill(LOCAL_DEFAULT_USER.oid);
    await page.getByLabel('Role', { exact: true }).selectOption({ label: 'Analytics Reader' });
    await page.getByRole('button', { name: 'Assign' }).click();
    await page.getByRole('button', { name: 'New role assignment' }).waitFor();
    const assignments = await app.call('GET', `${providers(app, 'Svc.Authorization')}/roleAssignments`);
    const details = await Promise.all(
      (assignments.body as { resource: { name: string } }[]).map(
        async (a) =>
          (
            (await app.call('GET', `${providers(app, 'Svc.Authorization')}/roleAssignments/${a.resource.name}`))
              .body as { resource: Record<string, string> }
          ).resource,
      ),
    );
    expect(details).toContainEqual(
      expect.objectContaining({
        principal_id: LOCAL_DEFAULT_USER.oid,
        principal_type: 'User',
        role_definition_id: roleDefinitionPath(ROLE_IDS.analyticsReader),
        scope: `/instances/${INSTANCE}`,
      }),
    );
    await page.goto(`${app.core}/portal/manage.html#analytics`);
    const chart = page.getByRole('img', { name: /^Tokens per agent: guide \d+/ });
    await chart.waitFor();
    expect(await page.getByRole('img', { name: /^Conversations per agent: (.*, )?guide [1-9]\d*\b/ }).count()).toBe(1);
    // The cost of the priced agent's calls per cost center and per agent, each with today's column, and the budgets set
    // above.
    const today = new Date().toISOString().slice(0, 10);
    const center = page.getByRole('figure').filter({ hasText: 'Cost center field-guides' });
    await center.waitFor();
    expect(await center.getByRole('img', { name: new RegExp(`per day: .*${today} 0\\.\\d+`) }).count()).toBe(1);
    expect(
      await page
        .getByRole('figure')
        .filter({ hasText: /^Agent guide: 0\.\d+ USD/ })
        .count(),
    ).toBe(1);
    const budgets = page.getByRole('table', { name: 'Budget status' });
    await expect
      .poll(() => budgets.getByRole('row').filter({ hasText: 'guides-monthly' }).textContent())
      .toMatch(/cost center.*50 USD a month.*0\.\d+ USD/);
    expect(
      await budgets.getByRole('row').filter({ hasText: 'per-person' }).filter({ hasText: 'owner@local.test' }).count(),
    ).toBe(1);
    await shot('analytics');
  });

  it('holds a spoken call from a fake microphone: both transcripts show live, and stay after a reload', async () => {
    const ref = (type: string, name: string) => `/instances/${INSTANCE}/providers/${type}/${name}`;
    const post = async (type: string, name: string, body: Record<string, unknown>) =>
      expect((await app.call('POST', `${app.management}${ref(type, name)}`, { body: { name, ...body } })).status).toBe(
        200,
      );
    await post('Svc.Configuration/apiEndpointConfigurations', 'voice-endpoint', {
      category: 'LLM',
      provider: 'openai',
      url: `${llm.url}/v1`,
      authentication_type: 'None',
    });
    await post('Svc.AIModel/aiModels', 'voice-model', {
      model_type: 'realtime',
      deployment_name: 'gpt-4o-realtime',
      api_endpoint_object_id: ref('Svc.Configuration/apiEndpointConfigurations', 'voice-endpoint'),
    });
    const guide = (
      (await app.call('GET', `${providers(app, 'Svc.Agent')}/agents/guide`)).body as {
        resource: { workflow_object_id: string };
      }
    ).resource;
    await post('Svc.Agent/agents', 'speaker', {
      workflow_object_id: guide.workflow_object_id,
      realtime_speech_settings: {
        enabled: true,
        realtime_speech_ai_model_object_id: ref('Svc.AIModel/aiModels', 'voice-model'),
      },
    });
    // The microphone speaks a recorded sentence (espeak-ng, 22.05 kHz mono WAV, committed as a fixture).
    const wav = fileURLToPath(new URL('../fixtures/hello-from-the-microphone.wav', import.meta.url));
    const speaking = await chromium.launch({
      executablePath: BROWSER,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--use-fake-ui-for-media-stream',
        '--use-fake-device-for-media-stream',
        `--use-file-for-fake-audio-capture=${wav}`,
        '--autoplay-policy=no-user-gesture-required',
      ],
    });
    try {
      const tab = await speaking.newPage();
      await tab.goto(await signInLink(app));
      await tab.getByLabel('User name (UPN)').fill(LOCAL_DEFAULT_USER.upn);
      await tab.getByRole('button', { name: 'Continue as this user' }).click();
      await expect.poll(() => tab.getByLabel('Agent').inputValue(), { timeout: 10_000 }).not.toBe('');
      await tab.getByLabel('Agent').selectOption('speaker');
      await tab.getByRole('button', { name: 'Start a call' }).click();
      const done = tab.getByRole('button', { name: 'Done speaking' });
      await expect.poll(() => done.isEnabled(), { timeout: 10_000 }).toBe(true);
      await tab.waitForTimeout(700);
      await done.click();
      const live = tab.getByRole('list', { name: 'Live transcript' });
      await expect
        .poll(() => live.textContent(), { timeout: 10_000 })
        .toBe('You: Hello from the microphoneAgent: Echo: Hello from the microphone');
      // The speech reached the model: the appended PCM16 frames carry sound, not silence.
      const heard = llm.realtime.calls.at(-1)?.received.filter((e) => e.type === 'input_audio_buffer.append') ?? [];
      const pcm = Buffer.concat(heard.map((e) => Buffer.from(String(e.audio), 'base64')));
      let loudest = 0;
      for (let i = 0; i + 1 < pcm.length; i += 2) loudest = Math.max(loudest, Math.abs(pcm.readInt16LE(i)));
      expect(loudest).toBeGreaterThan(2_000);
      await tab.screenshot({ path: path.join(SHOTS, 'chat-call.png'), fullPage: true });
      await tab.getByRole('button', { name: 'End the call' }).click();
      await expect
        .poll(() => tab.getByRole('group', { name: 'Spoken call' }).getByRole('status').textContent(), {
          timeout: 10_000,
        })
        .toContain('Call ended');
      const conversation = tab.getByRole('region', { name: 'Conversation' });
      await expect
        .poll(() => conversation.locator('li.message').allTextContents(), { timeout: 10_000 })
        .toEqual([
          expect.stringContaining('Hello from the microphone'),
          expect.stringContaining('Echo: Hello from the microphone'),
        ]);
      await tab.reload();
      await tab.getByLabel('Agent').selectOption('speaker');
      await tab
        .getByRole('region', { name: 'Sessions' })
        .getByRole('button', { name: 'Call with speaker', exact: true })
        .click();
      await expect
        .poll(() => conversation.locator('li.message .text').allTextContents(), { timeout: 10_000 })
        .toEqual(['Hello from the microphone', 'Echo: Hello from the microphone']);
    } finally {
      await speaking.close();
    }
  });

  it("passes axe-core's WCAG 2 A and AA rules on the main views", async () => {
    const axe = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
    const click = (name: string) => () => page.getByRole('button', { name }).first().click();
    const views: [string, string, string, (() => Promise<void>)?][] = [
      ['chat', '/portal/', 'Message'],
      ['agents', '/portal/manage.html#agents', 'New agent'],
      ['prompt editor', '/portal/manage.html#prompts', 'New prompt', click('New prompt')],
      ['history', '/portal/manage.html#prompts', 'New prompt', click('History of guide-prompt')],
      ['agent from template', '/portal/manage.html#agents', 'New agent', click('New agent from template')],
      ['evaluations', '/portal/manage.html#agents', 'New agent', click('Properties and tokens')],
      ['app configuration', '/portal/manage.html#appConfig', 'Add quota'],
      ['plugin packages', '/portal/manage.html#packages', 'Version'],
      ['analytics', '/portal/manage.html#analytics', 'Tokens per agent'],
    ];
    const found: string[] = [];
    let rules = 0;
    for (const [view, url, ready, open] of views) {
      // A fresh page each time: a hash alone does not load the page again.
      await page.goto('about:blank');
      await page.goto(`${app.core}${url}`);
      await page.getByText(ready).or(page.getByLabel(ready)).first().waitFor();
      await open?.();
      // What the click opened has loaded (a list, a form) before it is checked.
      await page.waitForLoadState('networkidle');
      // Evaluated through the DevTools protocol: the portal's Content Security Policy refuses inline scripts.
      await page.evaluate(axe);
      const result = await page.evaluate(() =>
        (
          window as unknown as {
            axe: {
              run: (
                o: unknown,
              ) => Promise<{ passes: unknown[]; violations: { id: string; nodes: { target: string[] }[] }[] }>;
            };
          }
        ).axe.run({ runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } }),
      );
      rules += result.passes.length;
      found.push(
        ...result.violations.map((v) => `${view}: ${v.id} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`),
      );
    }
    process.stdout.write(`axe-core: ${views.length} views, ${rules} rule checks passed, ${found.length} violations\n`);
    expect(found).toEqual([]);
  });

  it(
    'is used by keyboard alone: Tab to the agent and the message, Enter to send, Shift+Tab back to a rating, ' +
      'Space to give it',
    async () => {
      await page.goto(`${app.core}/portal/`);
      await page.getByLabel('Message').waitFor();
      /** Presses Tab (or Shift+Tab) until the focused element is the one `is` describes (at most 150 times). */
      const tabTo = async (is: (e: Element) => boolean, key = 'Tab') => {
        for (let i = 0; i < 150; i++) {
          await page.keyboard.press(key);
          if (await page.evaluate(`(${is.toString()})(document.activeElement)`)) return;
        }
        throw new Error('not reachable by Tab');
      };
      // The agent by type-ahead in its list (guide shows ratings), then the message.
      await tabTo((e) => e.id === 'agent');
      await page.keyboard.type('g');
      await expect.poll(() => page.getByLabel('Agent').inputValue()).toBe('guide');
      await tabTo((e) => e.id === 'prompt');
      await page.keyboard.type('Which penguins huddle?');
      await page.keyboard.press('Enter');
      const answer = page.locator('li.message.assistant').last();
      await expect.poll(() => answer.locator('.text').textContent()).toMatch(/^Echo: Which penguins huddle\?/);
      await tabTo(
        (e) => e === Array.from(document.querySelectorAll('li.message.assistant [aria-label="Bad answer"]')).at(-1),
        'Shift+Tab',
      );
      await page.keyboard.press('Space');
      await expect
        .poll(() => answer.getByRole('button', { name: 'Bad answer' }).getAttribute('aria-pressed'))
        .toBe('true');
    },
  );

  it(
    "shows what the agent's flags say: a welcome message, and no tokens, rating, prompt or upload when they are " +
      'off',
    async () => {
      const off = {
        show_message_tokens: false,
        show_message_rating: false,
        show_view_prompt: false,
        show_file_upload: false,
      };
      const set = await app.call('POST', `${providers(app, 'Svc.Agent')}/agents/concierge/set-properties`, {
        body: { properties: off, metadata_properties: { welcome_message: 'Welcome to the penguin house.' } },
      });
      expect(set.status).toBe(200);
      await page.goto(`${app.core}/portal/`);
      await page.getByLabel('Agent').selectOption('concierge');
      await page.getByRole('button', { name: 'New chat', exact: true }).click();
      const conversation = page.getByRole('region', { name: 'Conversation' });
      await expect
        .poll(() => conversation.locator('li.message.welcome').textContent())
        .toBe('Welcome to the penguin house.');
      expect(await page.getByText('Attach a file').count()).toBe(0);
      await page.getByLabel('Message').fill('Where do the penguins sleep?');
      await page.getByLabel('Message').press('Enter');
      const answer = conversation.locator('li.message.assistant').last();
      await expect.poll(() => answer.locator('.text').textContent()).toMatch(/^Echo: Where do the penguins sleep\?/);
      expect(await conversation.locator('li.message.welcome').count()).toBe(0);
      expect(await answer.locator('.tokens').count()).toBe(0);
      expect(await answer.getByRole('button', { name: 'Good answer' }).count()).toBe(0);
      expect(await answer.getByText('View prompt').count()).toBe(0);
      // The guide keeps the defaults: every one of them shows.
      await page.getByLabel('Agent').selectOption('guide');
      await page.getByText('Attach a file').waitFor();
      await page.getByLabel('Message').fill('And the guide?');
      await page.getByLabel('Message').press('Enter');
      const shown = conversation.locator('li.message.assistant').last();
      await expect.poll(() => shown.locator('.text').textContent()).toMatch(/^Echo: And the guide\?/);
      await expect.poll(() => shown.locator('.tokens').count()).toBe(1);
      expect(await shown.getByRole('button', { name: 'Good answer' }).count()).toBe(1);
      expect(await shown.getByText('View prompt').count()).toBe(1);
    },
  );

  it('fits a phone screen: no sideways scrolling (a long session name is cut), navigation above content', async () => {
    await app.call('POST', `${app.core}/instances/${INSTANCE}/sessions`, {
      body: { name: `A very long automatically named session ${'about penguins '.repeat(10)}` },
    });
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      for (const [url, ready] of [
        ['/portal/', 'Message'],
        ['/portal/manage.html#agents', 'New agent'],
        ['/portal/manage.html#appConfig', 'Add quota'],
      ] as const) {
        await page.goto(`${app.core}${url}`);
        await page.getByText(ready).or(page.getByLabel(ready)).first().waitFor();
        expect(
          await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth),
          url,
        ).toBeLessThanOrEqual(0);
        if (url === '/portal/') await shot('chat-phone');
      }
      const nav = await page.locator('.manage > nav').boundingBox();
      const main = await page.locator('.manage > main').boundingBox();
      expect(nav && main && nav.y + nav.height <= main.y).toBe(true);
    } finally {
      await page.setViewportSize({ width: 1280, height: 800 });
    }
  });
});

// Entra ID sign-in as deployed (PORTAL_ENTRA_*): the real MSAL in the page, with login.microsoftonline.com
// answered inside the browser (Playwright routes) by a stand-in for Entra that checks what MSAL sends
// (client id, redirect URI, scope, PKCE, the code and its verifier) and issues the tokens: the access
// token is one the service accepts (its local identity provider signs it), as Entra's would be in Azure.
describe.skipIf(!BROWSER)('Entra ID sign-in in Chromium', () => {
  const TENANT = '72f988bf-86f1-41af-91ab-2d7cd011db47';
  const CLIENT = '3c5a8f0e-6d2b-4e71-9a4f-1b2c3d4e5f60';
  const SCOPE = 'api://agent-platform/user_impersonation';
  const LOGIN = `https://login.microsoftonline.com/${TENANT}`;
  let app: TestApp;
  let browser: Browser;

  beforeAll(async () => {
    app = await startTestApp({
      PORTAL_ENTRA_CLIENT_ID: CLIENT,
      PORTAL_ENTRA_AUTHORITY: LOGIN,
      PORTAL_API_SCOPE: SCOPE,
      CORE_PORT: String(await freePort()),
      MANAGEMENT_PORT: String(await freePort()),
    });
    browser = await chromium.launch({
      executablePath: BROWSER,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
      ],
    });
  }, 120_000);
  afterAll(async () => {
    await browser.close();
    await app.close();
  });

  it('signs in with MSAL by redirect (auth code with PKCE) and calls the APIs with the access token', async () => {
    const page = await browser.newPage();
    const b64url = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
    const clientInfo = b64url({ uid: LOCAL_DEFAULT_USER.oid, utid: TENANT });
    const accessToken = await app.token();
    const seen: { authorize?: URLSearchParams; token?: URLSearchParams } = {};
    await page.route('https://login.microsoftonline.com/**', async (route) => {
      const url = new URL(route.request().url());
      const json = (body: unknown) =>
        route.fulfill({
          status: 200,
          contentType: 'application/json',
          headers: { 'access-control-allow-origin': '*' },
          body: JSON.stringify(body),
        });
      // MSAL carries login.microsoftonline.com's metadata; these two answer in case a version asks for it.
      if (url.pathname.endsWith('/.well-known/openid-configuration'))
        return json({
          issuer: `${LOGIN}/v2.0`,
          authorization_endpoint: `${LOGIN}/oauth2/v2.0/authorize`,
          token_endpoint: `${LOGIN}/oauth2/v2.0/token`,
          end_session_endpoint: `${LOGIN}/oauth2/v2.0/logout`,
          jwks_uri: `${LOGIN}/discovery/v2.0/keys`,
        });
      if (url.pathname.endsWith('/discovery/instance'))
        return json({
          tenant_discovery_endpoint: `${LOGIN}/v2.0/.well-known/openid-configuration`,
          'api-version': '1.1',
          metadata: [
            {
              preferred_network: 'login.microsoftonline.com',
              preferred_cache: 'login.windows.net',
              aliases: ['login.microsoftonline.com', 'login.windows.net'],
            },
          ],
        });
      if (url.pathname.endsWith('/oauth2/v2.0/authorize')) {
        seen.authorize = url.searchParams;
        const redirect = url.searchParams.get('redirect_uri') ?? '';
        const state = encodeURIComponent(url.searchParams.get('state') ?? '');
        const back = `${redirect}#code=the-code&state=${state}&client_info=${clientInfo}`;
        return route.fulfill({ status: 302, headers: { location: back } });
      }
      if (url.pathname.endsWith('/oauth2/v2.0/token')) {
        const form = new URLSearchParams(route.request().postData() ?? '');
        seen.token = form;
        const now = Math.floor(Date.now() / 1000);
        const claims = {
          iss: `${LOGIN}/v2.0`,
          aud: CLIENT,
          tid: TENANT,
          oid: LOCAL_DEFAULT_USER.oid,
          sub: LOCAL_DEFAULT_USER.oid,
          preferred_username: LOCAL_DEFAULT_USER.upn,
          name: 'Entra Owner',
          nonce: seen.authorize?.get('nonce'),
          iat: now,
          nbf: now,
          exp: now + 3600,
        };
        return json({
          token_type: 'Bearer',
          scope: SCOPE,
          expires_in: 3600,
          ext_expires_in: 3600,
          access_token: accessToken,
          id_token: `${b64url({ alg: 'RS256', typ: 'JWT', kid: 'k' })}.${b64url(claims)}.c2ln`,
          client_info: clientInfo,
        });
      }
      return route.fulfill({ status: 404, body: '' });
    });
    const agents = page.waitForRequest((r) => r.url().endsWith(`/instances/${INSTANCE}/completions/agents`));
    await page.goto(`${app.core}/portal/`);
    await page.getByRole('button', { name: 'Sign in with Microsoft' }).click();
    const call = await agents;

    const authorize = seen.authorize;
    expect(authorize?.get('client_id')).toBe(CLIENT);
    expect(authorize?.get('redirect_uri')).toBe(`${app.core}/portal/`);
    expect(authorize?.get('scope')?.split(' ')).toContain(SCOPE);
    expect(authorize?.get('response_type')).toBe('code');
    expect(authorize?.get('code_challenge_method')).toBe('S256');
    expect(seen.token?.get('code')).toBe('the-code');
    expect(seen.token?.get('client_id')).toBe(CLIENT);
    // PKCE: the verifier sent with the code is the one the challenge was made from.
    expect(
      createHash('sha256')
        .update(seen.token?.get('code_verifier') ?? '')
        .digest('base64url'),
    ).toBe(authorize?.get('code_challenge'));
    expect(await call.headerValue('authorization')).toBe(`Bearer ${accessToken}`);
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    expect(await page.getByRole('button', { name: 'Sign in with Microsoft' }).count()).toBe(0);
    expect((await call.response())?.status()).toBe(200);
    await page.close();
  });
});
