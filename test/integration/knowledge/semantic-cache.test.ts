// The semantic cache: a similar enough prompt to the same agent version is answered without a
// model call and says so; a less similar one, another agent version, another filter, or any request with
// session history or attachments goes to the model, and the personal ones are never stored.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockLlm, type MockLlm } from '../../../scripts/mock-llm.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { INSTANCE } from '../../support/services.js';
import { complete, seedKnowledgeAgent, updateAgent } from './support.js';

describe('semantic cache', () => {
  let llm: MockLlm;
  let app: TestApp;
  const agent = 'cached';
  /** Completions the model was asked for since the last call. */
  let seen = 0;
  const modelCalls = () => {
    const n = llm.requests.length - seen;
    seen = llm.requests.length;
    return n;
  };
  const enable = (threshold: number, embedding: string) =>
    updateAgent(app, agent, {
      cache_settings: {
        semantic_cache_enabled: true,
        semantic_cache_settings: { embedding_ai_model_object_id: embedding, minimum_similarity_threshold: threshold },
      },
    });

  beforeAll(async () => {
    llm = await startMockLlm();
    app = await startTestApp();
    const embedding = await seedKnowledgeAgent(app, llm, agent, { prices: { prompt: 1, completion: 1 } });
    await enable(0.9, embedding);
    modelCalls();
  });
  afterAll(async () => {
    await app.close();
    await llm.close();
  });

  it('answers a repeated prompt from the cache: no model call, no cost, the hit in analysis_results', async () => {
    const prompt = 'What are the opening hours of the Lisbon office on public holidays?';
    const first = await complete(app, agent, prompt);
    expect(first.status).toBe(200);
    expect(modelCalls()).toBe(1);
    expect(first.body.total_cost).toBeGreaterThan(0);
    expect(first.body.analysis_results).toEqual([]);

    const second = await complete(app, agent, prompt);
    expect(second.status).toBe(200);
    expect(modelCalls()).toBe(0);
    expect(second.body.completion).toBe(first.body.completion);
    expect(second.body.total_cost).toBe(0);
    expect(second.body.analysis_results).toEqual([
      { type: 'semantic_cache_hit', similarity: expect.closeTo(1, 5) as number },
    ]);
    // Streamed, the cached answer comes as the stream's text too.
    const streamed = await fetch(`${app.core}/instances/${INSTANCE}/completions`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${await app.token()}`,
        'content-type': 'application/json',
        accept: 'text/event-stream',
      },
      body: JSON.stringify({ user_prompt: prompt, agent_name: agent }),
    });
    expect(await streamed.text()).toContain('semantic_cache_hit');
    expect(modelCalls()).toBe(0);
  });

  it('goes to the model when the closest entry is below the threshold', async () => {
    await complete(app, agent, 'How do I reset my password for the expense system?');
    expect(modelCalls()).toBe(1);
    // Shares a few words only: similar, but not 0.9 similar.
    const other = await complete(app, agent, 'How do I book a meeting room for the quarterly review?');
    expect(modelCalls()).toBe(1);
    expect(other.body.analysis_results).toEqual([]);
  });

  it('never answers across agent versions or knowledge filters', async () => {
    const prompt = 'Which holidays does the company observe in Portugal this year?';
    await complete(app, agent, prompt);
    await complete(app, agent, prompt);
    expect(modelCalls()).toBe(1);
    await complete(app, agent, prompt, {
      settings: { agent_parameters: { index_filter_expression: "source eq 'handbook.md'" } },
    });
    expect(modelCalls()).toBe(1);
    // Saving the agent makes a new version: its earlier answers are not its answers any more.
    await updateAgent(app, agent, { description: 'changed' });
    const after = await complete(app, agent, prompt);
    expect(modelCalls()).toBe(1);
    expect(after.body.analysis_results).toEqual([]);
  });

  it('neither serves nor stores a request with session history', async () => {
    const session = (
      (await app.call('POST', `${app.core}/instances/${INSTANCE}/sessions`, { body: { name: 'cache' } })).body as {
        id: string;
      }
    ).id;
    const cached = 'Where is the nearest train station to the Porto office?';
    await complete(app, agent, cached);
    modelCalls();
    // The session's first turn has no history: it may use the cache.
    await complete(app, agent, cached, { session_id: session });
    expect(modelCalls()).toBe(0);
    // Now the session has history: even a cached prompt goes to the model...
    const withHistory = await complete(app, agent, cached, { session_id: session });
    expect(modelCalls()).toBe(1);
    expect(withHistory.body.analysis_results).toEqual([]);
    // ...and what it answers is not stored for anyone.
    const personal = 'Summarise what we discussed about my relocation request.';
    await complete(app, agent, personal, { session_id: session });
    expect(modelCalls()).toBe(1);
    await complete(app, agent, personal);
    expect(modelCalls()).toBe(1);
  });

  it('neither serves nor stores a request with attachments', async () => {
    const form = new FormData();
    form.append('file', new Blob(['My salary is 100 and my manager is Ana.'], { type: 'text/plain' }), 'private.txt');
    form.append('agent_name', agent);
    const upload = await fetch(`${app.core}/instances/${INSTANCE}/files/upload`, {
      method: 'POST',
      body: form,
      headers: { authorization: `Bearer ${await app.token()}` },
    });
    const attachment = ((await upload.json()) as { object_id: string }).object_id;
    const cached = 'What is the dress code for client meetings?';
    await complete(app, agent, cached);
    modelCalls();
    const attached = await complete(app, agent, cached, { attachments: [attachment] });
    expect(attached.status, JSON.stringify(attached.body)).toBe(200);
    expect(modelCalls()).toBe(1);
    const personal = 'What does the attached file say about my salary?';
    await complete(app, agent, personal, { attachments: [attachment] });
    expect(modelCalls()).toBe(1);
    // Another user asking the same thing never gets the answer made from the first user's file.
    const other = await complete(app, agent, personal, {}, 'alice@example.com');
    expect(other.status).toBe(403);
    await complete(app, agent, personal);
    expect(modelCalls()).toBe(1);
  });

  it('lets entries expire after SEMANTIC_CACHE_TTL_SECONDS', async () => {
    const short = await startTestApp({ SEMANTIC_CACHE_TTL_SECONDS: '1' });
    try {
      const embedding = await seedKnowledgeAgent(short, llm, 'brief');
      await updateAgent(short, 'brief', {
        cache_settings: {
          semantic_cache_enabled: true,
          semantic_cache_settings: { embedding_ai_model_object_id: embedding },
        },
      });
      modelCalls();
      const prompt = 'When is the next all-hands meeting?';
      await complete(short, 'brief', prompt);
      expect((await complete(short, 'brief', prompt)).body.analysis_results).toHaveLength(1);
      expect(modelCalls()).toBe(1);
      await new Promise((r) => setTimeout(r, 1100));
      expect((await complete(short, 'brief', prompt)).body.analysis_results).toEqual([]);
      expect(modelCalls()).toBe(1);
    } finally {
      await short.close();
    }
  });
});
