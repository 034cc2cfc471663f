// Access trimming end to end: blobs on Azurite marked with the groups that may read them
// (`svc_allowed_groups` metadata), indexed by a run; a user outside the group gets no citation of them and no
// semantic cache hit from an answer that drew on them, a user inside does; a change of the metadata alone
// changes who reads the document after the next run. And a knowledge tool's minimum_score.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockLlm, type MockLlm } from '../../../scripts/mock-llm.js';
import { grantReader } from '../../support/agents.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { INSTANCE } from '../../support/services.js';
import { TEXTS } from '../../support/documents.js';
import {
  processPipeline,
  seedKnowledgeAgent,
  seedPipeline,
  updateAgent,
  upsert,
  objectId,
  type Answer,
} from './support.js';
import { containerOf } from '../../support/storage.js';

const BOARD = TEXTS['revenue.pdf'].split('.')[0] ?? '';

describe('knowledge trimmed by groups', () => {
  let llm: MockLlm;
  let app: TestApp;
  const container = `trim-${randomUUID().slice(0, 8)}`;
  const blob = (name: string) => containerOf(app.services, container).getBlockBlobClient(name);
  /** A completion as `upn` with `groups` in the token. */
  const ask = async (upn: string, groups: string[], prompt: string) => {
    const res = await fetch(`${app.core}/instances/${INSTANCE}/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${await app.token(upn, { groups })}`, 'content-type': 'application/json' },
      body: JSON.stringify({ user_prompt: prompt, agent_name: 'trim-kb' }),
    });
    expect(res.status).toBe(200);
    return (await res.json()) as Answer;
  };
  const cited = (a: Answer) => [...new Set(a.citations.map((c) => c.source))];
  const cacheHit = (a: Answer) => a.analysis_results.some((r) => r.type === 'semantic_cache_hit');

  beforeAll(async () => {
    llm = await startMockLlm();
    app = await startTestApp({ ALLOW_PRIVATE_NETWORK: 'true' });
    await containerOf(app.services, container).create();
    await blob('docs/public.txt').uploadData(Buffer.from(TEXTS['penguins.txt']));
    await blob('docs/coffee.txt').uploadData(Buffer.from(TEXTS['coffee.html']));
    await blob('docs/board.txt').uploadData(Buffer.from(BOARD), {
      metadata: { svc_allowed_groups: 'G-Board, g-audit' },
    });
    const embedding = await seedKnowledgeAgent(app, llm, 'trim-kb');
    await seedPipeline(
      app,
      'trim-kb',
      'trim-docs',
      { data_source_type: 'AzureBlob', container },
      ['docs/'],
      'trim-docs',
    );
    await updateAgent(app, 'trim-kb', {
      cache_settings: {
        semantic_cache_enabled: true,
        semantic_cache_settings: { embedding_ai_model_object_id: embedding, minimum_similarity_threshold: 0.99 },
      },
    });
    for (const upn of ['member@example.com', 'outsider@example.com', 'auditor@example.com'])
      await grantReader(app, upn, 'trim-kb');
    expect((await processPipeline(app, 'trim-docs')).counts).toMatchObject({ documents: 3, added: 3 });
  });
  afterAll(async () => {
    await app.close();
    await llm.close();
  });

  it("cites a group's document only to members; their cached answer only to callers of the same groups", async () => {
    const member = await ask('member@example.com', ['g-board'], BOARD);
    expect(cited(member)[0]).toBe('docs/board.txt');
    expect(cacheHit(member)).toBe(false);
    // The same question again from the same groups: answered from the cache, with the same citations.
    const again = await ask('member@example.com', ['g-board'], BOARD);
    expect(cacheHit(again)).toBe(true);
    expect(cited(again)).toEqual(cited(member));

    const outsider = await ask('outsider@example.com', ['g-other'], BOARD);
    expect(cacheHit(outsider)).toBe(false);
    expect(cited(outsider)).not.toContain('docs/board.txt');
    const nobody = await ask('outsider@example.com', [], BOARD);
    expect(cited(nobody)).not.toContain('docs/board.txt');
    expect(cited(nobody).length).toBeGreaterThan(0);
    // Another group the document names, in another case.
    expect(cited(await ask('auditor@example.com', ['G-AUDIT'], BOARD))[0]).toBe('docs/board.txt');
  });

  it('follows a change of the groups alone on the next run, cached answers forgotten', async () => {
    await blob('docs/board.txt').setMetadata({ svc_allowed_groups: 'g-other' });
    const run = await processPipeline(app, 'trim-docs');
    expect(run.counts).toMatchObject({ updated: 1, unchanged: 2 });
    // The same questions as before: no cached answer stands for them now.
    const outsider = await ask('outsider@example.com', ['g-other'], BOARD);
    expect(cacheHit(outsider)).toBe(false);
    expect(cited(outsider)[0]).toBe('docs/board.txt');
    const member = await ask('member@example.com', ['g-board'], BOARD);
    expect(cacheHit(member)).toBe(false);
    expect(cited(member)).not.toContain('docs/board.txt');
  });

  it('gives the model and the answer no partition below the tool’s minimum score', async () => {
    const prompt = `${TEXTS['penguins.txt']} `;
    const all = await ask('auditor@example.com', [], prompt);
    const scores = all.citations.map((c) => c.score);
    expect(scores.some((s) => s < 0.5)).toBe(true);
    await upsert(app, 'Svc.Agent', 'tools', 'trim-docs-tool', {
      tool_type: 'knowledge',
      index_name: 'trim-docs',
      minimum_score: 0.5,
    });
    const kept = await ask('auditor@example.com', [], `${prompt} `);
    expect(kept.citations.length).toBeGreaterThan(0);
    expect(kept.citations.every((c) => c.score >= 0.5)).toBe(true);
    expect(kept.citations.length).toBeLessThan(all.citations.length);
    const refused = await app.call('POST', `${app.management}${objectId('Svc.Agent', 'tools', 'bad-minimum')}`, {
      body: { name: 'bad-minimum', tool_type: 'knowledge', index_name: 'trim-docs', minimum_score: 2 },
    });
    expect(refused.status).toBe(400);
  });
});
