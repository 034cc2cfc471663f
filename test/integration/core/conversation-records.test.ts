// Conversations that keep everything, on both stores: attachments the model reads (text extracted once and
// kept, a token budget with a marker, images for vision models), assistant messages that keep citations,
// content artifacts and the completion prompt, background streams that outlive their client and replay
// from Last-Event-ID, cancel, and concurrent turns on one session (multitask_strategy).
import { encode } from 'gpt-tokenizer/encoding/cl100k_base';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startMcpServer, type TestMcpServer } from '../../../scripts/mock-mcp.js';
import { startMockLlm, textOf, type ChatRequest, type MockLlm } from '../../../scripts/mock-llm.js';
import { grantReader } from '../../support/agents.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { docxOf, htmlOf, pdfOf, pptxOf, xlsxOf } from '../../support/documents.js';
import { brokenXrefPdf } from '../../support/hostile-documents.js';
import { INSTANCE } from '../../support/services.js';
import { readEvents } from '../../support/sse.js';
import { STORES } from '../../support/stores.js';
import {
  objectId,
  processPipeline,
  seedKnowledgeAgent,
  seedPipeline,
  serveDocuments,
  updateAgent,
  upsert,
  type DocumentServer,
} from '../knowledge/support.js';

const PNG = Buffer.from(
  '89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489' +
    '0000000d4944415478da63f8ffff3f0005fe02fea7d6a4c40000000049454e44ae426082',
  'hex',
);
const OTHER = 'someone.else@contoso.com';

interface Message {
  id: string;
  sender: string;
  text: string;
  citations?: { id: string; source: string; score: number }[];
  content_artifacts?: { type: string }[];
  completion_prompt_id?: string | null;
}

/** The user message's text (and image parts) of a model request. */
const userContent = (r: ChatRequest | undefined) =>
  r?.body.messages.findLast((m) => m.role === 'user')?.content ?? null;
const waitFor = async (check: () => boolean | Promise<boolean>, ms = 15_000) => {
  for (const until = Date.now() + ms; Date.now() < until; await new Promise((r) => setTimeout(r, 25)))
    if (await check()) return;
  throw new Error('condition not met in time');
};

describe.each(STORES)('conversation records on the $name store', (store) => {
  let app: TestApp;
  let llm: MockLlm;
  let web: DocumentServer;
  let mcp: TestMcpServer;
  const completions = `/instances/${INSTANCE}/completions`;

  const upload = async (bytes: Buffer, name: string, type?: string) => {
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(bytes)], type ? { type } : {}), name);
    form.append('agent_name', 'reader');
    const r = await fetch(`${app.core}/instances/${INSTANCE}/files/upload`, {
      method: 'POST',
      body: form,
      headers: { authorization: `Bearer ${await app.token()}` },
    });
    expect(r.status).toBe(200);
    return ((await r.json()) as { object_id: string }).object_id;
  };
  const newSession = async (as?: string) =>
    (
      (
        await app.call('POST', `${app.core}/instances/${INSTANCE}/sessions`, {
          body: { name: 'records' },
          ...(as ? { as } : {}),
        })
      ).body as { id: string }
    ).id;
  const complete = (body: Record<string, unknown>, as?: string) =>
    app.call('POST', `${app.core}${completions}`, { body: { agent_name: 'reader', ...body }, ...(as ? { as } : {}) });
  const messagesOf = async (session: string) =>
    (await app.call('GET', `${app.core}/instances/${INSTANCE}/sessions/${session}/messages`)).body as Message[];
  const stream = async (body: Record<string, unknown>, signal?: AbortSignal) =>
    fetch(`${app.core}${completions}`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${await app.token()}`,
        'content-type': 'application/json',
        accept: 'text/event-stream',
      },
      body: JSON.stringify({ agent_name: 'reader', ...body }),
      ...(signal ? { signal } : {}),
    });

  beforeAll(async () => {
    llm = await startMockLlm();
    web = await serveDocuments();
    mcp = await startMcpServer();
    app = await startTestApp({ ALLOW_PRIVATE_NETWORK: 'true' }, { store: await store.open() });
    await seedKnowledgeAgent(app, llm, 'reader', { history: { enabled: true, max_history: 5 } });
  });
  afterAll(async () => {
    await app.close();
    await mcp.close();
    await web.close();
    await llm.close();
  });

  it(
    'gives the model the text of PDF, DOCX, PPTX, XLSX, HTML and JSON attachments, extracted once and kept with ' +
      'the file',
    async () => {
      const files = [
        await upload(await pdfOf('Report', 'The Lisbon office grew revenue by eleven percent'), 'report.pdf'),
        await upload(await docxOf('Memo', 'Bicycles need chain oil every month'), 'memo.docx'),
        await upload(await pptxOf([['Roadmap 2027'], ['Launch the orbital tea kettle']]), 'deck.pptx'),
        await upload(
          await xlsxOf('Budget', [
            ['Item', 'Cost'],
            ['Kettle', 1250],
          ]),
          'budget.xlsx',
        ),
        await upload(htmlOf('Page', 'Volcanoes build islands'), 'page.html', 'text/html'),
        await upload(Buffer.from('{"answer": 42}'), 'data.json', 'application/json'),
      ];
      const extractions = vi.spyOn(app.services.extraction, 'extractCounted');
      const r = await complete({ user_prompt: 'Summarise the files', attachments: files });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      const sent = textOf(userContent(llm.requests.at(-1)));
      for (const [name, text] of [
        ['report.pdf', 'eleven percent'],
        ['memo.docx', 'chain oil'],
        ['deck.pptx', 'orbital tea kettle'],
        ['budget.xlsx', 'Kettle\t1250'],
        ['page.html', 'Volcanoes build islands'],
        ['data.json', '"answer": 42'],
      ]) {
        expect(sent).toContain(`Attached file "${name}":`);
        expect(sent.slice(sent.indexOf(`Attached file "${name}":`))).toContain(text);
      }
      // The files' text comes before the prompt.
      expect(sent.indexOf('Attached file')).toBeLessThan(sent.indexOf('Summarise the files'));
      expect(extractions).toHaveBeenCalledTimes(6);

      // A second completion reads the kept text: nothing is extracted again.
      expect((await complete({ user_prompt: 'Again', attachments: files })).status).toBe(200);
      expect(extractions).toHaveBeenCalledTimes(6);
      expect(textOf(userContent(llm.requests.at(-1)))).toContain('orbital tea kettle');
      extractions.mockRestore();
    },
  );

  it('cuts the attachments at ATTACHMENT_MAX_TOKENS with a marker, in the order attached', async () => {
    const long = Array.from({ length: 30_000 }, (_, i) => `word${i}`).join(' ');
    const [first, second] = [
      await upload(Buffer.from(long), 'long.txt'),
      await upload(Buffer.from('never read'), 'after.txt'),
    ];
    const r = await complete({ user_prompt: 'How long?', attachments: [first, second] });
    expect(r.status).toBe(200);
    const sent = textOf(userContent(llm.requests.at(-1)));
    const body = sent.slice(
      sent.indexOf('Attached file "long.txt":\n') + 'Attached file "long.txt":\n'.length,
      sent.indexOf('\n[... truncated'),
    );
    expect(encode(body).length).toBeLessThanOrEqual(20_000);
    expect(encode(body).length).toBeGreaterThan(19_000);
    expect(sent).toMatch(/Attached file "after.txt":\n\[\.\.\. truncated/);
    expect(sent).not.toContain('never read');
  });

  it('sends images to vision models as image parts, and refuses them for other models naming the file', async () => {
    const image = await upload(PNG, 'chart.png');
    const refused = await complete({ user_prompt: 'What is in the picture?', attachments: [image] });
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body)).toContain('chart.png');

    const model = `${app.management}${objectId('Svc.AIModel', 'aiModels', 'reader-model')}`;
    const current = ((await app.call('GET', model)).body as { resource: Record<string, unknown> }).resource;
    expect((await app.call('POST', model, { body: { ...current, capabilities: ['telepathy'] } })).status).toBe(400);
    expect((await app.call('POST', model, { body: { ...current, capabilities: ['vision'] } })).status).toBe(200);
    await waitFor(
      async () => (await complete({ user_prompt: 'What is in the picture?', attachments: [image] })).status === 200,
    );
    const content = userContent(llm.requests.at(-1));
    expect(Array.isArray(content)).toBe(true);
    expect(content).toContainEqual({
      type: 'image_url',
      image_url: { url: `data:image/png;base64,${PNG.toString('base64')}` },
    });
    expect(content).toContainEqual({
      type: 'text',
      text: expect.stringContaining('What is in the picture?') as string,
    });
  });

  it('answers 400 naming a file whose text cannot be extracted, and does not read it again', async () => {
    const broken = await upload(brokenXrefPdf(), 'broken.pdf');
    const extractions = vi.spyOn(app.services.extraction, 'extractCounted');
    for (let i = 0; i < 2; i++) {
      const r = await complete({ user_prompt: 'Read it', attachments: [broken] });
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ error: { code: 'ValidationError' } });
      expect(JSON.stringify(r.body)).toContain('broken.pdf');
    }
    expect(extractions).toHaveBeenCalledTimes(1);
    extractions.mockRestore();
    const record = (
      await app.services.store
        .container('files')
        .query({ where: [{ field: 'display_name', op: 'eq', value: 'broken.pdf' }] })
    ).items[0];
    expect(record?.unreadable).toBeTruthy();
  });

  it(
    'keeps citations, content artifacts and the completion prompt on the assistant message; only the owner ' +
      'reads the prompt',
    async () => {
      web.files.set('/kb/penguins.txt', {
        bytes: Buffer.from('Emperor penguins huddle against the Antarctic winter wind.'),
        type: 'text/plain',
      });
      await seedPipeline(
        app,
        'reader',
        'records-kb',
        { data_source_type: 'Web', urls: [`${web.url}/kb/`] },
        [`${web.url}/kb/penguins.txt`],
        'records-kb',
      );
      expect((await processPipeline(app, 'records-kb')).status).toBe('Completed');
      const session = await newSession();
      const r = await complete({
        user_prompt: 'Emperor penguins huddle against the Antarctic winter wind.',
        session_id: session,
        operation_id: `cited-${store.name}`,
      });
      expect(r.status).toBe(200);
      const answer = r.body as { citations: { id: string }[] };
      expect(answer.citations.length).toBeGreaterThan(0);
      const sentMessages = llm.requests.at(-1)?.body.messages;

      const [, assistant] = await messagesOf(session);
      expect(assistant).toMatchObject({ sender: 'Assistant', citations: answer.citations, content_artifacts: [] });
      expect(assistant?.completion_prompt_id).toEqual(expect.any(String));
      const sessionUrl = `${app.core}/instances/${INSTANCE}/sessions/${session}`;
      const promptUrl = `${sessionUrl}/completionprompts/${assistant?.completion_prompt_id}`;
      const prompt = await app.call('GET', promptUrl);
      expect(prompt.status).toBe(200);
      expect(prompt.body).toMatchObject({
        id: assistant?.completion_prompt_id,
        session_id: session,
        operation_id: `cited-${store.name}`,
      });
      // Exactly what the model was sent: system prompt, the retrieved knowledge and the prompt.
      expect((prompt.body as { messages: unknown }).messages).toEqual(sentMessages);
      expect((await app.call('GET', promptUrl, { as: OTHER })).status).toBe(404);

      // A redelivery (the same operation id) answers from the record, with its citations.
      const again = await complete({
        user_prompt: 'Emperor penguins huddle against the Antarctic winter wind.',
        session_id: session,
        operation_id: `cited-${store.name}`,
      });
      expect((again.body as { citations: unknown }).citations).toEqual(answer.citations);
      await updateAgent(app, 'reader', { tool_object_ids: [] });
    },
  );

  it(
    "shows a turn's prompt, when its agent hides its prompts (show_view_prompt false), only to one who may " +
      'write the agent',
    async () => {
      const viewer = `viewer-${store.name}@example.com`;
      await grantReader(app, viewer, 'reader');
      const promptOf = async (as?: string) => {
        const session = await newSession(as);
        expect((await complete({ user_prompt: 'What is in the prompt?', session_id: session }, as)).status).toBe(200);
        const [, assistant] = (
          await app.call('GET', `${app.core}/instances/${INSTANCE}/sessions/${session}/messages`, as ? { as } : {})
        ).body as Message[];
        const sessionUrl = `${app.core}/instances/${INSTANCE}/sessions/${session}`;
        return `${sessionUrl}/completionprompts/${assistant?.completion_prompt_id}`;
      };
      const [viewers, owners] = [await promptOf(viewer), await promptOf()];
      expect((await app.call('GET', viewers, { as: viewer })).status).toBe(200);
      const hide = (hidden: boolean) =>
        app.call('POST', `${app.management}${objectId('Svc.Agent', 'agents', 'reader')}/set-properties`, {
          body: { properties: { show_view_prompt: !hidden } },
        });
      expect((await hide(true)).status).toBe(200);
      try {
        const refused = await app.call('GET', viewers, { as: viewer });
        expect(refused.status).toBe(403);
        expect(JSON.stringify(refused.body)).not.toContain('You are');
        expect((await app.call('GET', owners)).status).toBe(200);
      } finally {
        await hide(false);
      }
    },
  );

  it('gives earlier turns their content artifacts of the types history_content_artifact_types names', async () => {
    await upsert(app, 'Svc.Agent', 'tools', 'records-calc', { tool_type: 'mcp', url: mcp.url, allowed_tools: ['add'] });
    await updateAgent(app, 'reader', {
      tool_object_ids: [objectId('Svc.Agent', 'tools', 'records-calc')],
      conversation_history_settings: { enabled: true, max_history: 5, history_content_artifact_types: 'ToolExecution' },
    });
    const session = await newSession();
    llm.setToolReflex({ name: 'records-calc__add', arguments: { a: 2, b: 3 } });
    try {
      await waitFor(
        async () => (await complete({ user_prompt: 'Add two and three', session_id: session })).status === 200,
      );
    } finally {
      llm.setToolReflex(undefined);
    }
    const [, assistant] = await messagesOf(session);
    expect(assistant?.content_artifacts).toEqual([
      expect.objectContaining({ type: 'ToolExecution', function_name: 'records-calc__add' }),
    ]);
    await complete({ user_prompt: 'And now?', session_id: session });
    const history = llm.requests
      .at(-1)
      ?.body.messages.filter((m) => m.role === 'assistant')
      .map((m) => textOf(m.content));
    expect(history?.at(-1)).toContain('"type":"ToolExecution"');

    await updateAgent(app, 'reader', {
      tool_object_ids: [],
      conversation_history_settings: { enabled: true, max_history: 5 },
    });
    await waitFor(async () => {
      await complete({ user_prompt: 'Without artifacts?', session_id: session });
      return !textOf(
        llm.requests.at(-1)?.body.messages.findLast((m) => m.role === 'assistant')?.content ?? null,
      ).includes('ToolExecution');
    });
  });

  it(
    'keeps a background stream running after its client leaves, numbers its events, and replays them after ' +
      'Last-Event-ID',
    async () => {
      const session = await newSession();
      const prompt = Array.from({ length: 30 }, (_, i) => `piece${i}`).join(' ');
      llm.setStreaming(50, 1500);
      const reading = new AbortController();
      const r = await stream({ user_prompt: prompt, session_id: session, background: true }, reading.signal);
      expect(r.status).toBe(200);
      const operationId = r.headers.get('x-operation-id');
      expect(operationId).toBeTruthy();
      // Three events read, then the client goes away.
      const raw: string[] = [];
      const reader = r.body!.getReader();
      while (raw.join('').split('\n\n').length < 4) raw.push(new TextDecoder().decode((await reader.read()).value));
      reading.abort();
      expect(raw.join('')).toMatch(/^id: 1\nevent: delta\n/);

      // The answer goes on and its turn is recorded.
      await waitFor(async () => (await messagesOf(session)).length === 2, 20_000);
      llm.setStreaming(0, 0);
      const replayed = await fetch(`${app.core}${completions}/${operationId}/stream`, {
        headers: { authorization: `Bearer ${await app.token()}`, 'last-event-id': '2' },
      });
      expect(replayed.status).toBe(200);
      const text = await replayed.text();
      const ids = [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
      expect(ids[0]).toBe(3);
      expect(ids).toEqual(ids.map((_, i) => i + 3));
      expect(text).toMatch(/event: completed\n/);
      // All of it from the start: the deltas add up to the completion.
      const all = await readEvents(
        (
          await fetch(`${app.core}${completions}/${operationId}/stream`, {
            headers: { authorization: `Bearer ${await app.token()}` },
          })
        ).body!,
      );
      const completed = all.at(-1)?.data as { completion: string };
      expect(
        all
          .filter((e) => e.event === 'delta')
          .map((e) => (e.data as { text: string }).text)
          .join(''),
      ).toBe(completed.completion);
      expect(completed.completion).toBe(`Echo: ${prompt}`);
      // Only its starter may replay it.
      expect((await app.call('GET', `${app.core}${completions}/${operationId}/stream`, { as: OTHER })).status).toBe(
        404,
      );
    },
  );

  it('cancels a background stream: it ends with an error event, code Cancelled, and records no turn', async () => {
    const session = await newSession();
    llm.setStreaming(50, 5000);
    try {
      const r = await stream({
        user_prompt: Array.from({ length: 40 }, (_, i) => `w${i}`).join(' '),
        session_id: session,
        background: true,
      });
      const operationId = r.headers.get('x-operation-id');
      const events = readEvents(r.body!);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect((await app.call('POST', `${app.core}${completions}/${operationId}/cancel`, { as: OTHER })).status).toBe(
        404,
      );
      const cancelled = await app.call('POST', `${app.core}${completions}/${operationId}/cancel`);
      expect(cancelled.status).toBe(200);
      expect(cancelled.body).toEqual({ operation_id: operationId, status: 'Cancelled' });
      const received = await events;
      expect(received.at(-1)).toMatchObject({ event: 'error', data: { error: { code: 'Cancelled' } } });
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(await messagesOf(session)).toEqual([]);
    } finally {
      llm.setStreaming(0, 0);
    }
  });

  it('runs concurrent turns of one session by multitask_strategy: reject, enqueue, interrupt', async () => {
    const session = await newSession();
    llm.next({ hangMs: 1500 });
    const before = llm.requests.length;
    const first = complete({ user_prompt: 'first turn', session_id: session });
    await waitFor(() => llm.requests.length > before);
    const rejected = await complete({
      user_prompt: 'rejected turn',
      session_id: session,
      multitask_strategy: 'reject',
    });
    expect(rejected.status).toBe(409);
    expect(rejected.body).toMatchObject({ error: { code: 'SessionBusy' } });
    // Enqueued: it waits for the first turn and sees its messages in its history.
    const queued = await complete({ user_prompt: 'queued turn', session_id: session, multitask_strategy: 'enqueue' });
    expect((await first).status).toBe(200);
    expect(queued.status).toBe(200);
    expect(llm.requests.at(-1)?.body.messages.map((m) => textOf(m.content))).toContain('first turn');

    // Interrupt: the running turn is cancelled (409 Cancelled, not recorded) and the new one runs.
    llm.next({ hangMs: 20_000 });
    const running = complete({ user_prompt: 'long turn', session_id: session });
    await waitFor(() => llm.requests.at(-1)?.body.messages.some((m) => textOf(m.content) === 'long turn') ?? false);
    const interrupting = await complete({
      user_prompt: 'interrupting turn',
      session_id: session,
      multitask_strategy: 'interrupt',
    });
    expect(interrupting.status).toBe(200);
    const interrupted = await running;
    expect(interrupted.status).toBe(409);
    expect(interrupted.body).toMatchObject({ error: { code: 'Cancelled' } });
    expect((await messagesOf(session)).map((m) => m.text)).toEqual([
      'first turn',
      'Echo: first turn',
      'queued turn',
      'Echo: queued turn',
      'interrupting turn',
      'Echo: interrupting turn',
    ]);
  });
});
