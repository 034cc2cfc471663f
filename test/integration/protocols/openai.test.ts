// The OpenAI-compatible API, called with the official `openai` package as any application would: models,
// Chat Completions (plain, streamed, with an agent access token as the key), Responses (create, stream,
// background with retrieve and cancel, previous_response_id), response formats reaching the model, OpenAI's
// error shapes, and quotas, usage records and telemetry shared with the Core API.
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import OpenAI, { APIError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalTracing } from '../../../shared/telemetry/local-tracing.js';
import { startMockLlm, textOf, type MockLlm } from '../../../scripts/mock-llm.js';
import { grantReader, seedAgent } from '../../support/agents.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { INSTANCE } from '../../support/services.js';

const QUOTAS = 'Svc:Quota:Definitions';

describe('the OpenAI-compatible API', () => {
  let app: TestApp;
  let llm: MockLlm;
  let owner: OpenAI;
  const exporter = new InMemorySpanExporter();
  let stopTracing: () => void;
  const baseURL = () => `${app.core}/instances/${INSTANCE}/openai/v1`;
  const client = (apiKey: string, extra: ConstructorParameters<typeof OpenAI>[0] = {}) =>
    new OpenAI({ apiKey, baseURL: baseURL(), maxRetries: 0, ...extra });
  const lastMessages = () => (llm.requests.at(-1)?.body.messages ?? []).map((m) => [m.role, textOf(m.content)]);
  /** The error an SDK call failed with, with OpenAI's error body. */
  const failure = async (call: Promise<unknown>) => {
    const e = await call.then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(e).toBeInstanceOf(APIError);
    const error = e as APIError;
    // OpenAI's error shape: message, type, param, code.
    expect(Object.keys(error.error as object).sort()).toEqual(['code', 'message', 'param', 'type']);
    return error;
  };
  const agentToken = async (agent: string) => {
    const r = await app.call(
      'POST',
      `${app.management}/instances/${INSTANCE}/providers/Svc.Agent/agents/${agent}/agent-access-tokens`,
      { body: { type: 'agent-access-token', name: `key-${agent}` } },
    );
    expect(r.status).toBe(200);
    return (r.body as { resource: string }).resource;
  };
  const setQuotas = async (definitions: unknown[]) =>
    expect(
      (
        await app.call(
          'POST',
          `${app.management}/instances/${INSTANCE}/providers/Svc.Configuration/appConfigurations/${QUOTAS}`,
          { body: { name: QUOTAS, key: QUOTAS, value: JSON.stringify(definitions) } },
        )
      ).status,
    ).toBe(200);

  beforeAll(async () => {
    stopTracing = startLocalTracing(exporter);
    llm = await startMockLlm();
    app = await startTestApp({ MODEL_MAX_RETRIES: '0' });
    await seedAgent(app, 'helper', {
      llmUrl: llm.url,
      history: { enabled: true, max_history: 10 },
      prefix: 'You are the helper.',
    });
    await seedAgent(app, 'other', { llmUrl: llm.url });
    await seedAgent(app, 'limited', { llmUrl: llm.url });
    await grantReader(app, 'reader@example.com', 'helper');
    owner = client(await app.token());
  });
  afterAll(async () => {
    await app.close();
    await llm.close();
    stopTracing();
  });

  it('lists the agents the caller may use as models, and only those', async () => {
    const mine = [];
    for await (const m of owner.models.list()) mine.push(m);
    expect(mine.map((m) => m.id)).toEqual(['helper', 'limited', 'other']);
    expect(mine[0]).toMatchObject({ object: 'model', owned_by: 'agent-platform' });
    const reader = client(await app.token('reader@example.com'));
    const theirs = [];
    for await (const m of reader.models.list()) theirs.push(m.id);
    expect(theirs).toEqual(['helper']);
    expect((await reader.models.retrieve('helper')).id).toBe('helper');
    expect((await failure(reader.models.retrieve('other'))).status).toBe(404);
  });

  it("answers a chat completion: the earlier messages are the history, after the agent's own prompt", async () => {
    const answer = await owner.chat.completions.create({
      model: 'helper',
      messages: [
        { role: 'system', content: 'Answer briefly.' },
        { role: 'user', content: 'first question' },
        { role: 'assistant', content: 'first answer' },
        { role: 'user', content: [{ type: 'text', text: 'second question' }] },
      ],
      temperature: 1.5,
      max_completion_tokens: 50,
    });
    expect(answer.object).toBe('chat.completion');
    expect(answer.id).toMatch(/^chatcmpl-/);
    expect(answer.model).toBe('helper');
    expect(answer.choices[0]?.message).toMatchObject({ role: 'assistant', content: 'Echo: second question' });
    expect(answer.choices[0]?.finish_reason).toBe('stop');
    expect(answer.usage?.total_tokens).toBe(
      (answer.usage?.prompt_tokens ?? 0) + (answer.usage?.completion_tokens ?? 0),
    );
    expect(answer.usage?.completion_tokens).toBeGreaterThan(0);
    // The caller's system message is the caller's text: only the agent's prompt instructs as the system.
    expect(lastMessages()).toEqual([
      ['system', 'You are the helper.'],
      ['user', 'Answer briefly.'],
      ['user', 'first question'],
      ['assistant', 'first answer'],
      ['user', 'second question'],
    ]);
    expect(llm.requests.at(-1)?.body).toMatchObject({ temperature: 1.5, max_tokens: 50 });
  });

  it('streams a chat completion in chunks, the usage in the last one when asked, ending with [DONE]', async () => {
    const stream = await owner.chat.completions.create({
      model: 'helper',
      messages: [{ role: 'user', content: 'stream this please' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.length).toBeGreaterThan(2);
    expect(new Set(chunks.map((c) => `${c.object} ${c.id}`)).size).toBe(1);
    expect(chunks[0]?.object).toBe('chat.completion.chunk');
    expect(chunks[0]?.choices[0]?.delta.role).toBe('assistant');
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('Echo: stream this please');
    expect(chunks.at(-2)?.choices[0]?.finish_reason).toBe('stop');
    const last = chunks.at(-1);
    expect(last?.choices).toEqual([]);
    expect(last?.usage?.completion_tokens).toBeGreaterThan(0);
    expect(chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true);
    // The raw stream ends with [DONE].
    const raw = await fetch(`${baseURL()}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${await app.token()}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'helper', messages: [{ role: 'user', content: 'raw' }], stream: true }),
    });
    expect(raw.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect((await raw.text()).trimEnd().endsWith('data: [DONE]')).toBe(true);
  });

  it('takes an agent access token as the API key (Bearer or api-key), for its own agent only', async () => {
    const token = await agentToken('other');
    const bot = client(token);
    const answer = await bot.chat.completions.create({
      model: 'other',
      messages: [{ role: 'user', content: 'from a key' }],
    });
    expect(answer.choices[0]?.message.content).toBe('Echo: from a key');
    const listed = [];
    for await (const m of bot.models.list()) listed.push(m.id);
    expect(listed).toEqual(['other']);
    const refused = await failure(
      bot.chat.completions.create({ model: 'helper', messages: [{ role: 'user', content: 'not mine' }] }),
    );
    expect(refused.status).toBe(404);
    expect(refused.code).toBe('model_not_found');
    // As Azure OpenAI clients send it.
    const azureStyle = await fetch(`${baseURL()}/chat/completions`, {
      method: 'POST',
      headers: { 'api-key': token, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'other', messages: [{ role: 'user', content: 'azure style' }] }),
    });
    expect(azureStyle.status).toBe(200);
    expect(
      ((await azureStyle.json()) as { choices: { message: { content: string } }[] }).choices[0]?.message.content,
    ).toBe('Echo: azure style');
    const wrongKey = await failure(client(`${token.slice(0, -8)}xxxxayek`).models.list());
    expect(wrongKey.status).toBe(401);
  });

  it('passes a json_schema response format to the model, from Chat Completions and from Responses', async () => {
    const schema = {
      type: 'object',
      properties: { city: { type: 'string' } },
      required: ['city'],
      additionalProperties: false,
    };
    await owner.chat.completions.create({
      model: 'helper',
      messages: [{ role: 'user', content: 'where?' }],
      response_format: { type: 'json_schema', json_schema: { name: 'place', schema, strict: true } },
    });
    expect(llm.requests.at(-1)?.body.response_format).toEqual({
      type: 'json_schema',
      json_schema: { name: 'place', schema, strict: true },
    });
    await owner.responses.create({
      model: 'helper',
      input: 'where now?',
      text: { format: { type: 'json_schema', name: 'place', schema, strict: true } },
    });
    expect(llm.requests.at(-1)?.body.response_format).toEqual({
      type: 'json_schema',
      json_schema: { name: 'place', schema, strict: true },
    });
  });

  it('creates and retrieves responses; previous_response_id carries the conversation', async () => {
    const first = await owner.responses.create({ model: 'helper', input: 'my name is Ada' });
    expect(first).toMatchObject({
      object: 'response',
      status: 'completed',
      model: 'helper',
      previous_response_id: null,
    });
    expect(first.id).toMatch(/^resp_/);
    expect(first.output_text).toBe('Echo: my name is Ada');
    expect(first.usage?.total_tokens).toBeGreaterThan(0);
    const retrieved = await owner.responses.retrieve(first.id);
    expect(retrieved.output_text).toBe('Echo: my name is Ada');
    expect(retrieved.status).toBe('completed');

    const second = await owner.responses.create({
      model: 'helper',
      input: [{ role: 'user', content: 'what is my name?' }],
      previous_response_id: first.id,
    });
    expect(second.previous_response_id).toBe(first.id);
    expect(lastMessages()).toEqual([
      ['system', 'You are the helper.'],
      ['user', 'my name is Ada'],
      ['assistant', 'Echo: my name is Ada'],
      ['user', 'what is my name?'],
    ]);
    // Another user sees neither, and cannot continue them.
    const reader = client(await app.token('reader@example.com'));
    expect((await failure(reader.responses.retrieve(first.id))).status).toBe(404);
    expect(
      (await failure(reader.responses.create({ model: 'helper', input: 'hi', previous_response_id: first.id }))).param,
    ).toBe('previous_response_id');
  });

  it("streams a response with Responses' events, and keeps it", async () => {
    const stream = await owner.responses.create({ model: 'helper', input: 'stream a response', stream: true });
    const events = [];
    for await (const event of stream) events.push(event);
    const types = [...new Set(events.map((e) => e.type))];
    expect(types).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const text = events.flatMap((e) => (e.type === 'response.output_text.delta' ? [e.delta] : [])).join('');
    expect(text).toBe('Echo: stream a response');
    const completed = events.at(-1);
    expect(completed?.type === 'response.completed' && completed.response.status).toBe('completed');
    const id = completed?.type === 'response.completed' ? completed.response.id : '';
    expect((await owner.responses.retrieve(id)).output_text).toBe('Echo: stream a response');
  });

  it('runs a background response on the queue: retrieved until it ends, or cancelled', async () => {
    const queued = await owner.responses.create({ model: 'helper', input: 'in the background', background: true });
    expect(queued).toMatchObject({ status: 'queued', background: true, output: [] });
    let done = queued;
    for (let i = 0; i < 200 && (done.status === 'queued' || done.status === 'in_progress'); i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      done = await owner.responses.retrieve(queued.id);
    }
    expect(done.status).toBe('completed');
    expect(done.output_text).toBe('Echo: in the background');

    llm.next({ hangMs: 20_000 });
    const slow = await owner.responses.create({ model: 'helper', input: 'slow one', background: true });
    await expect
      .poll(async () => (await owner.responses.retrieve(slow.id)).status, { timeout: 10_000 })
      .toBe('in_progress');
    const cancelled = await owner.responses.cancel(slow.id);
    expect(cancelled.status).toBe('cancelled');
    expect((await owner.responses.retrieve(slow.id)).status).toBe('cancelled');
    await expect.poll(() => llm.aborted, { timeout: 5000 }).toBeGreaterThan(0);
    // Only background responses are cancelled.
    const sync = await owner.responses.create({ model: 'helper', input: 'sync' });
    expect((await failure(owner.responses.cancel(sync.id))).status).toBe(400);
    llm.clear();
  });

  it("answers every error in OpenAI's shape and status", async () => {
    const noKey = await failure(client('not-a-token').models.list());
    expect(noKey.status).toBe(401);
    expect(noKey.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_api_key' });
    const missing = await failure(
      owner.chat.completions.create({ model: 'ghost', messages: [{ role: 'user', content: 'hi' }] }),
    );
    expect(missing.status).toBe(404);
    expect(missing.error).toMatchObject({ type: 'invalid_request_error', code: 'model_not_found', param: 'model' });
    // An agent the caller may not use reads the same as one that does not exist.
    const reader = client(await app.token('reader@example.com'));
    const denied = await failure(
      reader.chat.completions.create({ model: 'other', messages: [{ role: 'user', content: 'hi' }] }),
    );
    expect(denied.status).toBe(404);
    expect(denied.error).toEqual({
      ...(missing.error as object),
      message: 'The model `other` does not exist or you do not have access to it.',
    });
    const empty = await failure(owner.chat.completions.create({ model: 'helper', messages: [] }));
    expect(empty.status).toBe(400);
    expect(empty.error).toMatchObject({ type: 'invalid_request_error', param: 'messages' });
    const notUser = await failure(
      owner.chat.completions.create({
        model: 'helper',
        messages: [
          { role: 'user', content: 'a' },
          { role: 'assistant', content: 'b' },
        ],
      }),
    );
    expect(notUser.param).toBe('messages');
    const hot = await failure(
      owner.chat.completions.create({ model: 'helper', messages: [{ role: 'user', content: 'a' }], temperature: 3 }),
    );
    expect(hot.param).toBe('temperature');
    expect((await failure(owner.responses.retrieve('resp_unknown'))).status).toBe(404);
    llm.next({ status: 500, body: { error: { message: 'boom' } } });
    const upstream = await failure(
      owner.chat.completions.create({ model: 'helper', messages: [{ role: 'user', content: 'fail' }] }),
    );
    expect(upstream.status).toBe(502);
    expect(upstream.error).toMatchObject({ type: 'server_error' });
  });

  it('counts requests of every protocol against one quota, and records and traces the protocol', async () => {
    await setQuotas([
      {
        name: 'Shared',
        context: 'CoreAPI:Completions:limited',
        metric_partition: 'UserPrincipalName',
        metric_limit: 3,
        metric_window_seconds: 3600,
      },
    ]);
    try {
      exporter.reset();
      const core = await app.call('POST', `${app.core}/instances/${INSTANCE}/completions`, {
        body: { user_prompt: 'core call', agent_name: 'limited' },
      });
      expect(core.status).toBe(200);
      const chat = await owner.chat.completions.create({
        model: 'limited',
        messages: [{ role: 'user', content: 'chat call' }],
      });
      const response = await owner.responses.create({ model: 'limited', input: 'responses call' });
      const spent = await failure(
        owner.chat.completions.create({ model: 'limited', messages: [{ role: 'user', content: 'one too many' }] }),
      );
      expect(spent.status).toBe(429);
      expect(spent.error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limit_exceeded' });
      expect(spent.headers?.get('retry-after')).toMatch(/^\d+$/);
      expect(
        (
          await app.call('POST', `${app.core}/instances/${INSTANCE}/completions`, {
            body: { user_prompt: 'core again', agent_name: 'limited' },
          })
        ).status,
      ).toBe(429);

      const usage = app.services.store.container('usage');
      const byOperation = (id: string) => usage.read('owner@local.test', id);
      expect((await byOperation((core.body as { operation_id: string }).operation_id))?.protocol).toBe('core');
      expect((await byOperation(chat.id.replace(/^chatcmpl-/, '')))?.protocol).toBe('openai');
      expect((await byOperation(response.id.replace(/^resp_/, '')))?.protocol).toBe('openai');
      const root = exporter.getFinishedSpans().find((s) => s.name === 'openai-chat-completions');
      expect(root?.attributes).toMatchObject({
        'Svc-Protocol': 'openai',
        'Svc-OperationId': chat.id.replace(/^chatcmpl-/, ''),
      });
      const model = exporter
        .getFinishedSpans()
        .find(
          (s) =>
            s.name === 'chat limited-deployment' &&
            s.attributes['Svc-OperationId'] === chat.id.replace(/^chatcmpl-/, ''),
        );
      expect(model?.attributes['Svc-Protocol']).toBe('openai');
      expect(exporter.getFinishedSpans().find((s) => s.name === 'completions-create')?.attributes['Svc-Protocol']).toBe(
        'core',
      );
    } finally {
      await setQuotas([]);
    }
  });
});
