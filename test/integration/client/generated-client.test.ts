// A client generated from the served OpenAPI document (openapi-typescript types, openapi-fetch) compiles
// under strict TypeScript with no edits and runs a session, a completion, a file upload and the file list
// against the running service.
import { execFile } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientTypes } from '../../../scripts/client-types.js';
import { startMockLlm, type MockLlm } from '../../../scripts/mock-llm.js';
import { seedAgent } from '../../support/agents.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { INSTANCE } from '../../support/services.js';

const run = promisify(execFile);

/** What a user of the generated types writes: no casts, no `any`. */
const PROGRAM = `import createClient from 'openapi-fetch';
import type { paths } from './core-api.js';

const client = createClient<paths, 'application/json'>({
  baseUrl: process.env.BASE_URL ?? '',
  headers: { authorization: \`Bearer \${process.env.TOKEN ?? ''}\` },
});
const instanceId = process.env.INSTANCE_ID ?? '';

const session = await client.POST('/instances/{instanceId}/sessions', {
  params: { path: { instanceId } },
  body: { name: 'Generated' },
});
if (!session.data) throw new Error(\`session: \${JSON.stringify(session.error)}\`);
const sessionId: string = session.data.id;

const upload = await client.POST('/instances/{instanceId}/files/upload', {
  params: { path: { instanceId } },
  body: {
    file: new File(['The launch code is 4242.'], 'code.txt', { type: 'text/plain' }),
    agent_name: 'typed',
    session_id: sessionId,
  },
  bodySerializer(body) {
    const form = new FormData();
    for (const [name, value] of Object.entries(body)) if (value !== undefined) form.append(name, value);
    return form;
  },
});
if (!upload.data) throw new Error(\`upload: \${JSON.stringify(upload.error)}\`);
const objectId: string = upload.data.object_id;

const completion = await client.POST('/instances/{instanceId}/completions', {
  params: { path: { instanceId } },
  body: { user_prompt: 'What is the code?', agent_name: 'typed', session_id: sessionId, attachments: [objectId] },
});
if (!completion.data) throw new Error(\`completion: \${JSON.stringify(completion.error)}\`);
const answer: string = completion.data.completion;
const tokens: number = completion.data.total_tokens;

const files = await client.GET('/instances/{instanceId}/files', {
  params: { path: { instanceId }, query: { top: 10 } },
});
if (!files.data) throw new Error(\`files: \${JSON.stringify(files.error)}\`);
const listed: { name: string; bytes: number }[] = files.data.map((f) => ({
  name: f.display_name,
  bytes: f.size_bytes,
}));

const refused = await client.POST('/instances/{instanceId}/completions', {
  params: { path: { instanceId } },
  body: { user_prompt: '' },
});
// A 400 is the error envelope; a 429 would be the quota response.
const code: string | undefined = refused.error && 'error' in refused.error ? refused.error.error.code : undefined;

const messages = await client.GET('/instances/{instanceId}/sessions/{sessionId}/messages', {
  params: { path: { instanceId, sessionId } },
});
const senders = messages.data?.map((m) => m.sender);
console.log(JSON.stringify({ sessionId, objectId, answer, tokens, listed, refusedCode: code, senders }));
`;

/** The Management API's typed answers: plugin packages and an analytics query. */
const MANAGEMENT_PROGRAM = `import createClient from 'openapi-fetch';
import type { components, paths } from './management-api.js';

const client = createClient<paths, 'application/json'>({
  baseUrl: process.env.BASE_URL ?? '',
  headers: { authorization: \`Bearer \${process.env.TOKEN ?? ''}\` },
});
const instanceId = process.env.INSTANCE_ID ?? '';
const packages = await client.GET('/instances/{instanceId}/providers/Svc.Platform/pluginPackages', {
  params: { path: { instanceId }, query: { 'api-version': '2024-02-16' } },
});
const names: string[] = (packages.data ?? []).map((p) => p.resource.name + '@' + p.resource.current_version);
const analytics = await client.POST('/instances/{instanceId}/providers/Svc.Analytics/analytics/query', {
  params: { path: { instanceId }, query: { 'api-version': '2024-02-16' } },
  body: { request_type: 0, filters: {} },
});
const overview = analytics.data?.resource.data as components['schemas']['AnalyticsOverview'] | undefined;
const status: number = analytics.response.status;
console.log(JSON.stringify({ names, status, conversations: overview?.total_conversations ?? null }));
`;

/** Writes the types of one API and a program that uses them, and type-checks the program strictly. */
async function compile(dir: string, api: 'core' | 'management', document: object, program: string): Promise<string> {
  writeFileSync(path.join(dir, `${api}-api.ts`), await clientTypes(document));
  const file = `${api}-client.ts`;
  writeFileSync(path.join(dir, file), program);
  const config = path.join(dir, `tsconfig.${api}.json`);
  writeFileSync(
    config,
    JSON.stringify({
      compilerOptions: {
        target: 'ES2023',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        strict: true,
        noUncheckedIndexedAccess: true,
        noEmit: true,
        skipLibCheck: true,
        lib: ['ES2023', 'DOM'],
        types: ['node'],
      },
      files: [file],
    }),
  );
  const tsc = path.resolve('node_modules/typescript/bin/tsc');
  await run(process.execPath, [tsc, '-p', config]).catch((e: unknown) => {
    throw new Error(`tsc failed:\n${(e as { stdout?: string }).stdout ?? (e as Error).message}`);
  });
  return path.join(dir, file);
}

describe('a client generated from the OpenAPI document', () => {
  let app: TestApp;
  let llm: MockLlm;
  const dir = path.resolve('.tmp', `generated-client-${process.pid}`);

  beforeAll(async () => {
    llm = await startMockLlm();
    app = await startTestApp();
    await seedAgent(app, 'typed', { llmUrl: llm.url });
    mkdirSync(dir, { recursive: true });
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await app.close();
    await llm.close();
  });

  it('compiles under strict TypeScript and runs a session, a completion, a file upload and the file list', async () => {
    const document = (await (await fetch(`${app.core}/openapi.json`)).json()) as object;
    // Compiles: no type errors in the generated types or in their use.
    const program = await compile(dir, 'core', document, PROGRAM);

    // Runs against the service.
    const { stdout } = await run(process.execPath, ['--import', 'tsx', program], {
      env: { ...process.env, BASE_URL: app.core, TOKEN: await app.token(), INSTANCE_ID: INSTANCE },
    });
    const out = JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
    expect(out.answer).toBe('Echo: Attached file "code.txt":\nThe launch code is 4242.\n\nWhat is the code?');
    expect(llm.requests.at(-1)?.body.messages.at(-1)?.content).toContain('The launch code is 4242.');
    expect(out.tokens).toBeGreaterThan(0);
    expect(out.objectId).toMatch(/\/providers\/Svc\.Attachment\/attachments\//);
    expect(out.listed).toEqual([{ name: 'code.txt', bytes: 24 }]);
    expect(out.refusedCode).toBe('ValidationError');
    expect(out.senders).toEqual(['User', 'Assistant']);
  }, 120_000);

  it('types the Management API too: plugin packages and analytics compile and run', async () => {
    const document = (await (await fetch(`${app.management}/openapi.json`)).json()) as object;
    const program = await compile(dir, 'management', document, MANAGEMENT_PROGRAM);
    const { stdout } = await run(process.execPath, ['--import', 'tsx', program], {
      env: { ...process.env, BASE_URL: app.management, TOKEN: await app.token(), INSTANCE_ID: INSTANCE },
    });
    // The owner may list packages (none yet); analytics needs the Analytics Reader role: 403.
    expect(JSON.parse(stdout.trim().split('\n').at(-1)!)).toEqual({ names: [], status: 403, conversations: null });
  }, 120_000);
});
